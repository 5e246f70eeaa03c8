// Package dist is memo's data-parallel backend: it finds this process's rank
// the way torchrun or Slurm announce it, joins a libtorch c10d process group
// (Gloo on CPU, NCCL in CUDA builds), and sums gradients across ranks for
// package train. Launch starts N local ranks like torchrun (memo run --nproc
// N); for multi-node runs, experiments.SlurmScript (memo sweep --slurm)
// starts the ranks with srun.
//
// Faults: a killed rank closes its sockets and its peers' collectives fail
// at once; a rank that stops silently (a hung machine) is named by its
// missing heartbeat after Config.DeadAfter (20 s by default); a rank that
// lives but never arrives is bounded by Config.Timeout (30 minutes, as
// PyTorch's Gloo default, or MEMO_DIST_TIMEOUT): rank 0 alone writing a
// large checkpoint is such a rank. Every error names the rank it blames.
package dist
