#ifndef MEMO_TORCHX_C10D_H
#define MEMO_TORCHX_C10D_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct memo_pg memo_pg;

// Every function that can fail returns NULL or non-zero and stores a
// malloc'd message in *err (the caller frees it).

// memo_pg_new_gloo joins a group of size ranks: rank 0 serves a TCPStore on
// addr:port, the others connect to it; all wait at most timeout_ms for the
// rendezvous, and every later collective fails after timeout_ms, or, with
// dead_ms > 0, as soon as a peer's heartbeat (or rank 0's store) has been
// silent for dead_ms; the error then names the silent ranks and says
// "(no heartbeat)".
memo_pg *memo_pg_new_gloo(const char *addr, int port, int rank, int size,
                          int64_t timeout_ms, int64_t dead_ms,
                          const char *iface, char **err);
// memo_pg_new_nccl is only defined in CUDA builds (build tag cuda).
memo_pg *memo_pg_new_nccl(const char *addr, int port, int rank, int size,
                          int64_t timeout_ms, char **err);

// memo_pg_allreduce sums n tensors (void* = torch::Tensor*) across ranks,
// flattened per dtype into buckets of at most bucket_bytes; with divide
// set, the sums are divided by the group size (the mean).
int memo_pg_allreduce(memo_pg *pg, void **tensors, int n, int64_t bucket_bytes,
                      int divide, char **err);
// memo_pg_broadcast copies root's n tensors into every rank's.
int memo_pg_broadcast(memo_pg *pg, void **tensors, int n, int root,
                      int64_t bucket_bytes, char **err);
int memo_pg_barrier(memo_pg *pg, char **err);
// memo_pg_silent_ranks lists (into out, at most max) the ranks whose
// heartbeat did not advance during wait_ms; it returns their number, or -1
// when the store itself (served by rank 0) cannot be reached.
int memo_pg_silent_ranks(memo_pg *pg, int *out, int max, int64_t wait_ms);
void memo_pg_free(memo_pg *pg);

// Sharded collectives (c10d_shard.cpp): the n tensors, of one dtype, read
// as one flat vector in list order, of which the i-th of the ranks taking
// part owns the elements [i*shard, (i+1)*shard). members (nmembers ranks,
// in that order) names the ranks taking part; NULL: every rank, in rank
// order. chunk bounds the elements moved per round.
// memo_pg_shard_allgather copies every member's owned range into every
// member's tensors.
int memo_pg_shard_allgather(memo_pg *pg, void **tensors, int n, int64_t shard,
                            int64_t chunk, const int *members, int nmembers,
                            char **err);
// memo_pg_shard_reduce_scatter sums the members' tensors into each
// member's owned range (a ring of send/recv); the rest of the tensors is
// left holding partial sums.
int memo_pg_shard_reduce_scatter(memo_pg *pg, void **tensors, int n,
                                 int64_t shard, int64_t chunk,
                                 const int *members, int nmembers, char **err);
// memo_pg_shard_root moves each rank's local vector of shard elements to
// (to_root set) or from root's n tensors, at the range rank q owns: range
// slots[q] (slots NULL: range q); the other ranks pass n = 0.
int memo_pg_shard_root(memo_pg *pg, void **tensors, int n, void *local,
                       int64_t shard, int root, int to_root, const int *slots,
                       char **err);
#ifdef __cplusplus
}
#endif
#endif
