//go:build cuda

// NCCL process group creation for CUDA builds (compiled against libtorch
// 2.11's headers; never run on GPUs). Collectives reuse memo_pg_allreduce &
// co.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "c10d.h"
#include "c10d_internal.hpp"

extern "C" memo_pg *memo_pg_new_nccl(const char *addr, int port, int rank,
                                     int size, int64_t timeout_ms, char **err) {
  auto p = std::make_unique<memo_pg>();
  try {
    p->rank = rank;
    p->size = size;
    p->addr = addr;
    p->port = port;
    p->timeout = std::chrono::milliseconds(timeout_ms);
    p->store = memo_open_store(addr, port, rank == 0, size, p->timeout);
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = p->timeout;
    p->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(p->store, rank, size, opts);
    memo_start_heartbeat(p.get());
    return p.release();
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
  }
  return nullptr;
}
