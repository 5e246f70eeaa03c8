// Shared by c10d.cpp and the CUDA-only c10d_nccl.cpp.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

struct memo_pg {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  // A second store client for the heartbeat thread, so that it never
  // shares a socket with the collectives' rendezvous traffic.
  c10::intrusive_ptr<c10d::TCPStore> hbStore;
  std::thread hb;
  std::atomic<bool> stop{false};
  int rank = 0;
  int size = 1;
  std::string addr;
  int port = 0;
  std::chrono::milliseconds timeout{60000};
};

// memo_err copies msg into a malloc'd C string.
char *memo_err(const std::string &msg);
// memo_open_store connects to (rank 0: serves) the TCPStore; size 0 opens
// an extra client that the rendezvous does not count.
c10::intrusive_ptr<c10d::TCPStore> memo_open_store(const std::string &addr,
                                                   int port, bool server,
                                                   int size,
                                                   std::chrono::milliseconds t);
// memo_start_heartbeat starts the thread that bumps hb/<rank> every second.
void memo_start_heartbeat(memo_pg *p);
