// Collectives over a flat partition of a list of tensors, for sharded data
// parallelism (train.shard): the tensors, all of one dtype, are read as one
// flat vector of P elements in list order, and rank r owns the elements
// [r*S, min((r+1)*S, P)), S = ceil(P/N) (the caller passes S). Every
// collective here moves only the owned ranges, in chunks of at most
// chunk elements per rank, so that its scratch memory is N chunks, not a
// copy of the tensors.
//
// libtorch 1.13's ProcessGroupGloo declares reduce_scatter but throws
// "does not support reduce_scatter"; the reduce-scatter here is a ring of
// send/recv pairs, which every c10d backend (Gloo, NCCL) has in 1.13 and
// 2.x alike. It sends exactly (N-1) chunks per rank per chunk round, what
// a bandwidth-optimal reduce-scatter sends.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "c10d.h"
#include "c10d_internal.hpp"

namespace {

// flatList is a list of tensors addressed as one flat vector.
struct flatList {
  std::vector<at::Tensor> flat;  // each tensor viewed as 1-D (shares storage)
  std::vector<int64_t> start;    // start[i]: flat index of tensor i's first element
  int64_t total = 0;

  flatList(void **tensors, int n) {
    for (int i = 0; i < n; i++) {
      at::Tensor t = *static_cast<at::Tensor *>(tensors[i]);
      if (!t.is_contiguous())
        throw std::runtime_error("tensor " + std::to_string(i) + " is not contiguous: a sharded collective writes through a flat view");
      if (i > 0 && t.scalar_type() != flat[0].scalar_type())
        throw std::runtime_error("tensors of several dtypes (" + std::string(c10::toString(flat[0].scalar_type())) +
                                 ", " + std::string(c10::toString(t.scalar_type())) + ") in one sharded collective");
      flat.push_back(t.detach().view({-1}));
      start.push_back(total);
      total += t.numel();
    }
  }

  // each calls fn(tensor's flat view narrowed, offset in [lo, hi)) for the
  // pieces of the flat range [lo, hi) (clipped to total).
  template <class F> void each(int64_t lo, int64_t hi, F fn) {
    hi = std::min(hi, total);
    for (size_t i = 0; i < flat.size() && lo < hi; i++) {
      int64_t a = start[i], b = a + flat[i].numel();
      int64_t x = std::max(lo, a), y = std::min(hi, b);
      if (x < y) fn(flat[i].narrow(0, x - a, y - x), x - lo);
    }
  }

  // read copies [lo, lo+dst.numel()) into dst, zeros past the end.
  void read(int64_t lo, at::Tensor dst) {
    if (lo + dst.numel() > total) dst.zero_();
    each(lo, lo + dst.numel(), [&](at::Tensor piece, int64_t off) {
      dst.narrow(0, off, piece.numel()).copy_(piece);
    });
  }

  // write copies src into [lo, lo+src.numel()) (what lies past the end is dropped).
  void write(int64_t lo, const at::Tensor &src) {
    each(lo, lo + src.numel(), [&](at::Tensor piece, int64_t off) {
      piece.copy_(src.narrow(0, off, piece.numel()));
    });
  }
};

void check(int64_t shard, int ranks, int64_t total) {
  if (shard < 1 || shard * ranks < total)
    throw std::runtime_error("shard of " + std::to_string(shard) + " elements × " + std::to_string(ranks) +
                             " ranks does not cover " + std::to_string(total) + " elements");
}

// ring is the ranks a collective runs among, in the order of the ranges
// they own: all of the group's (members NULL) or a subset.
struct ring {
  std::vector<int> ranks;
  int me = -1; // this rank's index in ranks

  ring(memo_pg *p, const int *members, int n) {
    if (members == nullptr) {
      for (int q = 0; q < p->size; q++) ranks.push_back(q);
    } else {
      ranks.assign(members, members + n);
    }
    for (size_t i = 0; i < ranks.size(); i++) {
      if (ranks[i] < 0 || ranks[i] >= p->size)
        throw std::runtime_error("member " + std::to_string(ranks[i]) + " is not a rank of a group of " + std::to_string(p->size));
      if (ranks[i] == p->rank) me = int(i);
    }
    if (me < 0) throw std::runtime_error("rank " + std::to_string(p->rank) + " is not among the collective's members");
  }
  int size() const { return int(ranks.size()); }
  int next() const { return ranks[(me + 1) % size()]; }
  int prev() const { return ranks[(me + size() - 1) % size()]; }
};

// waitP2P waits for a send or receive. Not in slices as memo_wait waits
// for collectives: Gloo ends a point-to-point wait that times out by
// closing every pair of the group ("Application timeout caused pair
// closure"), so a slice shorter than a slow transfer would break a healthy
// group. A killed peer still fails it at once (its sockets close); a
// stopped one, only after the group's timeout.
void waitP2P(memo_pg *p, const c10::intrusive_ptr<c10d::Work> &w) { w->wait(p->timeout); }

// sendable is what a send of t hands the backend: t, or its host copy
// where the backend reads the bytes with the host (hostP2P).
at::Tensor sendable(memo_pg *p, const at::Tensor &t) {
  return p->hostP2P && t.is_cuda() ? t.to(at::kCPU) : t.contiguous();
}

// receivable is the buffer a receive into t fills: t, or a host tensor of
// its shape that landed copies into t afterwards.
at::Tensor receivable(memo_pg *p, const at::Tensor &t) {
  return p->hostP2P && t.is_cuda() ? torch::empty(t.sizes(), t.options().device(at::kCPU)) : t;
}

// landed copies a receive's host buffer into its tensor, where they differ.
void landed(const at::Tensor &t, const at::Tensor &buf) {
  if (!buf.is_same(t)) t.copy_(buf);
}

// exchange sends s to the next rank of r and receives v from the previous.
void exchange(memo_pg *p, const ring &r, at::Tensor s, at::Tensor v, int tag) {
  std::vector<at::Tensor> sv{sendable(p, s)};
  std::vector<at::Tensor> vv{receivable(p, v)};
  auto ws = p->pg->send(sv, r.next(), tag);
  auto wr = p->pg->recv(vv, r.prev(), tag);
  waitP2P(p, wr);
  waitP2P(p, ws);
  landed(v, vv[0]);
}

int failShard(char **err, const char *what, const std::exception &e) {
  *err = memo_copy_message(std::string(what) + ": " + e.what());
  return 1;
}

} // namespace

extern "C" {

int memo_pg_shard_allgather(memo_pg *p, void **tensors, int n, int64_t shard,
                            int64_t chunk, const int *members, int nmembers,
                            char **err) {
  try {
    torch::NoGradGuard ng;
    if (n == 0) return 0;
    flatList f(tensors, n);
    ring rg(p, members, nmembers);
    check(shard, rg.size(), f.total);
    const int N = rg.size(), r = rg.me;
    for (int64_t o = 0; o < shard; o += chunk) {
      int64_t len = std::min(chunk, shard - o);
      if (members == nullptr) {
        std::vector<at::Tensor> in{torch::empty({len}, f.flat[0].options())};
        f.read(int64_t(r) * shard + o, in[0]);
        std::vector<std::vector<at::Tensor>> out(1);
        for (int q = 0; q < N; q++) out[0].push_back(torch::empty({len}, f.flat[0].options()));
        c10d::AllgatherOptions ao;
        ao.timeout = p->timeout;
        memo_wait(p, p->pg->allgather(out, in, ao));
        for (int q = 0; q < N; q++)
          if (q != r) f.write(int64_t(q) * shard + o, out[0][q]);
        continue;
      }
      // Among a subset of the ranks: a ring of send/recv (a c10d
      // all-gather needs a process group of its own). Step k passes on
      // the range of member r-k, received the step before (its own at
      // k = 0): N-1 chunks sent per rank, as the ring all-gather sends.
      at::Tensor cur = torch::empty({len}, f.flat[0].options());
      at::Tensor got = torch::empty({len}, f.flat[0].options());
      f.read(int64_t(r) * shard + o, cur);
      for (int k = 0; k < N - 1; k++) {
        exchange(p, rg, cur, got, (1 << 21) + k);
        int from = ((r - k - 1) % N + N) % N;
        f.write(int64_t(from) * shard + o, got);
        std::swap(cur, got);
      }
    }
    return 0;
  } catch (const std::exception &e) {
    return failShard(err, "sharded all-gather", e);
  }
}

int memo_pg_shard_reduce_scatter(memo_pg *p, void **tensors, int n,
                                 int64_t shard, int64_t chunk,
                                 const int *members, int nmembers, char **err) {
  try {
    torch::NoGradGuard ng;
    if (n == 0) return 0;
    flatList f(tensors, n);
    ring rg(p, members, nmembers);
    check(shard, rg.size(), f.total);
    const int N = rg.size(), r = rg.me;
    for (int64_t o = 0; o < shard; o += chunk) {
      int64_t len = std::min(chunk, shard - o);
      // buf holds this rank's values of every member's chunk, side by side.
      at::Tensor buf = torch::empty({int64_t(N) * len}, f.flat[0].options());
      for (int q = 0; q < N; q++) f.read(int64_t(q) * shard + o, buf.narrow(0, int64_t(q) * len, len));
      at::Tensor tmp = torch::empty({len}, f.flat[0].options());
      // Step k passes chunk (r-k-1) on to the next member and adds the
      // previous member's partial sum of chunk (r-k-2) into this rank's;
      // after N-1 steps chunk r holds all N members' contributions.
      for (int k = 0; k < N - 1; k++) {
        int sendIdx = ((r - k - 1) % N + N) % N, recvIdx = ((r - k - 2) % N + N) % N;
        exchange(p, rg, buf.narrow(0, int64_t(sendIdx) * len, len), tmp, k);
        buf.narrow(0, int64_t(recvIdx) * len, len).add_(tmp);
      }
      f.write(int64_t(r) * shard + o, buf.narrow(0, int64_t(r) * len, len));
    }
    return 0;
  } catch (const std::exception &e) {
    return failShard(err, "sharded reduce-scatter", e);
  }
}

int memo_pg_shard_root(memo_pg *p, void **tensors, int n, void *local,
                       int64_t shard, int root, int toRoot, const int *slots,
                       char **err) {
  try {
    torch::NoGradGuard ng;
    at::Tensor loc = static_cast<at::Tensor *>(local)->detach();
    if (!loc.is_contiguous() || loc.dim() != 1 || loc.numel() != shard)
      throw std::runtime_error("local shard must be a contiguous vector of " + std::to_string(shard) + " elements");
    const int N = p->size, r = p->rank;
    auto slot = [&](int q) { return int64_t(slots == nullptr ? q : slots[q]); };
    if (r != root) {
      std::vector<at::Tensor> v{toRoot ? sendable(p, loc) : receivable(p, loc)};
      waitP2P(p, toRoot ? p->pg->send(v, root, 1 << 20) : p->pg->recv(v, root, 1 << 20));
      if (!toRoot) landed(loc, v[0]);
      return 0;
    }
    flatList f(tensors, n);
    check(shard, N, f.total);
    if (toRoot) f.write(slot(r) * shard, loc);
    else f.read(slot(r) * shard, loc);
    at::Tensor buf = torch::empty({shard}, loc.options());
    for (int q = 0; q < N; q++) {
      if (q == r) continue;
      if (toRoot) {
        std::vector<at::Tensor> v{receivable(p, buf)};
        waitP2P(p, p->pg->recv(v, q, 1 << 20));
        landed(buf, v[0]);
        f.write(slot(q) * shard, buf);
      } else {
        f.read(slot(q) * shard, buf);
        std::vector<at::Tensor> v{sendable(p, buf)};
        waitP2P(p, p->pg->send(v, q, 1 << 20));
      }
    }
    return 0;
  } catch (const std::exception &e) {
    return failShard(err, toRoot ? "gather shards" : "scatter shards", e);
  }
}

} // extern "C"
