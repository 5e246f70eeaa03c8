// c10d process groups for memo's data parallelism: rendezvous on a TCPStore,
// Gloo collectives on CPU tensors, and a heartbeat that lets a rank whose
// collective failed tell which peer went silent.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <unistd.h>
#include <map>
#include <vector>

// Gloo is compiled in when the libtorch memo builds against comes with Gloo's
// headers (scripts/gotchgen sets USE_C10D_GLOO); pip's torch ships without
// them, and headers of another Gloo release need not match the Gloo inside
// that libtorch.
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/torch.h>

#include "c10d.h"
#include "c10d_internal.hpp"

c10::intrusive_ptr<c10d::TCPStore> memo_open_store(const std::string &addr,
                                                   int port, bool server,
                                                   int size,
                                                   std::chrono::milliseconds t) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = server;
  // size > 0: a rank's main client, counted by the server's wait for all
  // workers; size 0: an extra client (heartbeat, diagnosis), not counted.
  o.waitWorkers = size > 0;
  if (size > 0) o.numWorkers = size;
  o.timeout = t;
  return c10::make_intrusive<c10d::TCPStore>(addr, o);
}

static std::string memo_hb_key(int rank) { return "memo/hb/" + std::to_string(rank); }

// watchPeers records, under p->mu, which peers' heartbeats moved since the
// last look and that the store answered.
static void watchPeers(memo_pg *p, bool fresh) {
  std::vector<int64_t> now(p->size);
  for (int r = 0; r < p->size; r++)
    if (r != p->rank) now[r] = p->hbStore->add(memo_hb_key(r), 0);
  auto t = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lk(p->mu);
  p->storeOK = t;
  for (int r = 0; r < p->size; r++)
    if (fresh || now[r] != p->seen[r]) {
      p->seen[r] = now[r];
      p->moved[r] = t;
    }
}

namespace {

// What the terminate handler says about this process's group.
std::mutex termMu;
std::string termWho;    // "rank 1 of 2"
std::string termStore;  // "127.0.0.1:29500"
std::terminate_handler prevTerminate = nullptr;

// storeGone ends the process when a libtorch thread we do not own lets an
// exception escape. libtorch 1.13's TCPStore clients read their callback
// socket on a thread of their own, which throws std::system_error
// ("Connection reset by peer") when rank 0, which serves the store, dies
// with data in flight: std::terminate would abort with a core dump and no
// word of which rank went away. Any other exception goes to the handler
// that was there before.
[[noreturn]] void storeGone() {
  std::string msg;
  try {
    if (auto e = std::current_exception()) std::rethrow_exception(e);
  } catch (const std::system_error &e) {
    msg = e.what();
  } catch (...) {
  }
  if (msg.find("Connection reset") != std::string::npos || msg.find("Broken pipe") != std::string::npos) {
    std::string who, store;
    {
      std::lock_guard<std::mutex> lk(termMu);
      who = termWho;
      store = termStore;
    }
    std::string line = "memo: " + who + ": the connection to rank 0's store at " + store + " was lost (" + msg +
                       "): rank 0 is down, stopped or unreachable\n";
    ssize_t n = write(2, line.data(), line.size());
    (void)n;
    _exit(1);
  }
  if (prevTerminate != nullptr) prevTerminate();
  std::abort();
}

}  // namespace

void memo_start_heartbeat(memo_pg *p) {
  {
    std::lock_guard<std::mutex> lk(termMu);
    termWho = "rank " + std::to_string(p->rank) + " of " + std::to_string(p->size);
    termStore = p->addr + ":" + std::to_string(p->port);
    if (prevTerminate == nullptr) prevTerminate = std::set_terminate(storeGone);
  }
  p->hbStore = memo_open_store(p->addr, p->port, false, 0, p->timeout);
  std::string key = memo_hb_key(p->rank);
  p->hbStore->add(key, 1);
  p->seen.assign(p->size, 0);
  p->moved.assign(p->size, std::chrono::steady_clock::now());
  p->storeOK = std::chrono::steady_clock::now();
  p->hb = std::thread([p, key] {
    bool was = false;
    while (!p->stop.load()) {
      for (int i = 0; i < 10 && !p->stop.load(); i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      try {
        p->hbStore->add(key, 1);
        // Peers are read only while a collective is waited on, so an
        // idle group puts no load on rank 0's store.
        bool w = p->watching.load();
        if (w) watchPeers(p, !was);
        was = w;
      } catch (...) {
        return; // the store is gone; storeOK stops moving
      }
    }
  });
}

extern "C" {

memo_pg *memo_pg_new_gloo(const char *addr, int port, int rank, int size,
                          int64_t timeout_ms, int64_t dead_ms,
                          const char *iface, char **err) {
#ifndef USE_C10D_GLOO
  *err = memo_copy_message("this memo was built without Gloo: the libtorch it was built "
                  "against has no Gloo headers (include/gloo); CPU data "
                  "parallelism needs a libtorch that ships them, such as "
                  "Debian's libtorch-dev with libgloo-dev");
  return nullptr;
#else
  auto p = std::make_unique<memo_pg>();
  try {
    p->rank = rank;
    p->size = size;
    p->addr = addr;
    p->port = port;
    p->timeout = std::chrono::milliseconds(timeout_ms);
    p->deadAfter = std::chrono::milliseconds(dead_ms);
    p->store = memo_open_store(addr, port, rank == 0, size, p->timeout);
    auto opts = c10d::ProcessGroupGloo::Options::create(p->timeout);
    if (iface != nullptr && iface[0] != 0) {
      opts->devices = {c10d::ProcessGroupGloo::createDeviceForInterface(iface)};
    } else if (std::strncmp(addr, "127.", 4) == 0 ||
               std::strcmp(addr, "localhost") == 0) {
      // All ranks on this machine: talk over loopback.
      opts->devices = {c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")};
    } else {
      opts->devices = {c10d::ProcessGroupGloo::createDefaultDevice()};
    }
    p->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(p->store, rank, size, opts);
    p->hostP2P = true;
    memo_start_heartbeat(p.get());
    return p.release();
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
  } catch (...) {
    *err = memo_copy_message("unknown C++ exception");
  }
  return nullptr;
#endif
}

namespace {

// bucket is a run of same-dtype tensors flattened into one buffer.
struct bucket {
  std::vector<at::Tensor> parts;
  at::Tensor flat;
};

std::vector<bucket> buckets(void **tensors, int n, int64_t maxBytes) {
  std::map<int, std::vector<bucket>> byType; // keeps a fixed order per dtype
  std::map<int, int64_t> fill;
  for (int i = 0; i < n; i++) {
    at::Tensor t = *static_cast<at::Tensor *>(tensors[i]);
    int k = static_cast<int>(t.scalar_type());
    int64_t b = t.numel() * t.element_size();
    auto &bs = byType[k];
    if (bs.empty() || (fill[k] + b > maxBytes && !bs.back().parts.empty())) {
      bs.emplace_back();
      fill[k] = 0;
    }
    bs.back().parts.push_back(t);
    fill[k] += b;
  }
  std::vector<bucket> out;
  for (auto &kv : byType)
    for (auto &b : kv.second) {
      std::vector<at::Tensor> flat;
      for (auto &t : b.parts) flat.push_back(t.detach().reshape({-1}));
      b.flat = torch::cat(flat);
      out.push_back(std::move(b));
    }
  return out;
}

void scatter(bucket &b) {
  torch::NoGradGuard ng;
  int64_t off = 0;
  for (auto &t : b.parts) {
    int64_t m = t.numel();
    t.detach().copy_(b.flat.narrow(0, off, m).view(t.sizes()));
    off += m;
  }
}

using clk = std::chrono::steady_clock;

// waitAlive waits for a collective. With a dead-peer bound it waits in
// slices and, between them, asks the heartbeat thread's record whether a
// peer (or rank 0's store) has been silent for p->deadAfter: a stopped
// rank keeps its sockets open, and Gloo alone would wait the full timeout.
void waitAlive(memo_pg *p, const c10::intrusive_ptr<c10d::Work> &w) {
  if (p->deadAfter.count() == 0) {
    w->wait(p->timeout);
    return;
  }
  const auto slice = std::chrono::milliseconds(500);
  struct unwatch {
    memo_pg *p;
    ~unwatch() { p->watching.store(false); }
  } guard{p};
  auto start = clk::now();
  while (true) {
    try {
      w->wait(slice);
      return;
    } catch (...) {
      // Either the slice ran out or the collective failed: a failed one
      // is complete, and waiting again rethrows its error.
      if (w->isCompleted()) {
        w->wait();
        return;
      }
    }
    auto now = clk::now();
    if (!p->watching.load()) {
      // The heartbeat thread starts its record at its next beat.
      std::lock_guard<std::mutex> lk(p->mu);
      p->moved.assign(p->size, now);
      p->storeOK = now;
      p->watching.store(true);
      continue;
    }
    std::string dead;
    {
      std::lock_guard<std::mutex> lk(p->mu);
      if (now - p->storeOK > p->deadAfter) {
        throw std::runtime_error(
            "rank 0's store at " + p->addr + ":" + std::to_string(p->port) +
            " has not answered for " +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - p->storeOK).count()) +
            " s: rank 0 is down, stopped or unreachable (no heartbeat)");
      }
      for (int r = 0; r < p->size; r++)
        if (r != p->rank && now - p->moved[r] > p->deadAfter)
          dead += (dead.empty() ? "rank " : ", rank ") + std::to_string(r);
    }
    if (!dead.empty())
      throw std::runtime_error(
          dead + " sent no heartbeat for " +
          std::to_string(p->deadAfter.count() / 1000) +
          " s: down, stopped or unreachable (no heartbeat)");
    if (now - start > p->timeout + std::chrono::seconds(5))
      throw std::runtime_error("timed out after " + std::to_string(p->timeout.count()) + " ms");
  }
}

int fail(char **err, const char *what, const std::exception &e) {
  *err = memo_copy_message(std::string(what) + ": " + e.what());
  return 1;
}

} // namespace

extern "C++" void memo_wait(memo_pg *p, const c10::intrusive_ptr<c10d::Work> &w) { waitAlive(p, w); }

int memo_pg_allreduce(memo_pg *p, void **tensors, int n, int64_t bucket_bytes,
                      int divide, char **err) {
  try {
    auto bs = buckets(tensors, n, bucket_bytes);
    // Start every bucket's reduction before waiting on the first, so the
    // transfers of one overlap the summing of another.
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto &b : bs) {
      std::vector<at::Tensor> v{b.flat};
      c10d::AllreduceOptions o;
      o.timeout = p->timeout;
      works.push_back(p->pg->allreduce(v, o));
    }
    for (size_t i = 0; i < bs.size(); i++) {
      waitAlive(p, works[i]);
      if (divide) {
        if (!at::isFloatingType(bs[i].flat.scalar_type()))
          throw std::runtime_error("cannot average a tensor of integer type " +
                                   std::string(c10::toString(bs[i].flat.scalar_type())));
        bs[i].flat.div_(p->size);
      }
      scatter(bs[i]);
    }
    return 0;
  } catch (const std::exception &e) {
    return fail(err, "all-reduce", e);
  }
}

int memo_pg_broadcast(memo_pg *p, void **tensors, int n, int root,
                      int64_t bucket_bytes, char **err) {
  try {
    auto bs = buckets(tensors, n, bucket_bytes);
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto &b : bs) {
      std::vector<at::Tensor> v{b.flat};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      o.timeout = p->timeout;
      works.push_back(p->pg->broadcast(v, o));
    }
    for (size_t i = 0; i < bs.size(); i++) {
      waitAlive(p, works[i]);
      if (p->rank != root) scatter(bs[i]);
    }
    return 0;
  } catch (const std::exception &e) {
    return fail(err, "broadcast", e);
  }
}

int memo_pg_barrier(memo_pg *p, char **err) {
  try {
    c10d::BarrierOptions o;
    o.timeout = p->timeout;
    waitAlive(p, p->pg->barrier(o));
    return 0;
  } catch (const std::exception &e) {
    return fail(err, "barrier", e);
  }
}

int memo_pg_silent_ranks(memo_pg *p, int *out, int max, int64_t wait_ms) {
  try {
    // A fresh client: the group's own may be mid-request.
    auto s = memo_open_store(p->addr, p->port, false, 0,
                             std::chrono::milliseconds(5000));
    std::vector<int64_t> before(p->size);
    for (int r = 0; r < p->size; r++) before[r] = s->add(memo_hb_key(r), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    int k = 0;
    for (int r = 0; r < p->size; r++) {
      if (r == p->rank) continue;
      if (s->add(memo_hb_key(r), 0) == before[r] && k < max) out[k++] = r;
    }
    return k;
  } catch (...) {
    return -1;
  }
}

void memo_pg_free(memo_pg *p) {
  if (p == nullptr) return;
  p->stop.store(true);
  if (p->hb.joinable()) p->hb.join();
  delete p;
}

} // extern "C"
