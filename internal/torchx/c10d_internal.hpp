// Shared by c10d.cpp and the CUDA-only c10d_nccl.cpp.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include "errmsg.h"

// Since libtorch 2.0 the Gloo and NCCL classes derive from c10d::Backend (a
// ProcessGroup wraps one backend per device type); in 1.x (Debian's 1.13)
// they are ProcessGroups themselves. memo drives one backend directly, and
// both bases have the collectives it calls (allreduce, broadcast, barrier).
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
using memo_backend = c10d::Backend;
#else
using memo_backend = c10d::ProcessGroup;
#endif

struct memo_pg {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<memo_backend> pg;
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
  // Gloo's send and recv move a tensor's bytes through its data pointer,
  // which for a CUDA tensor is device memory: such a tensor goes through a
  // host copy (c10d_shard.cpp). Its collectives take CUDA tensors as they are.
  bool hostP2P = false;
  // Liveness, kept by the heartbeat thread while a collective is waited on
  // for longer than a moment (watching set): when each peer's counter last
  // moved and when the store last answered. A stopped machine keeps its
  // sockets open, so only this tells a dead peer from a slow one before
  // the collective's timeout.
  std::chrono::milliseconds deadAfter{0}; // 0: wait out the timeout
  std::atomic<bool> watching{false};
  std::mutex mu;
  std::vector<int64_t> seen;
  std::vector<std::chrono::steady_clock::time_point> moved;
  std::chrono::steady_clock::time_point storeOK;
};

// memo_open_store connects to (rank 0: serves) the TCPStore; size 0 opens
// an extra client that the rendezvous does not count.
c10::intrusive_ptr<c10d::TCPStore> memo_open_store(const std::string &addr,
                                                   int port, bool server,
                                                   int size,
                                                   std::chrono::milliseconds t);
// memo_start_heartbeat starts the thread that bumps hb/<rank> every second.
void memo_start_heartbeat(memo_pg *p);
// memo_wait waits for a collective as c10d.cpp's own do: up to the
// group's timeout, ended sooner by a peer's missing heartbeat.
void memo_wait(memo_pg *p, const c10::intrusive_ptr<c10d::Work> &w);
