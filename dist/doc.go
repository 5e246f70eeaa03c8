// Package dist is memo's data-parallel backend: it finds this process's rank
// the way torchrun or Slurm announce it, joins a libtorch c10d process group
// (Gloo on CPU, NCCL in CUDA builds), and averages gradients across ranks for
// package train. Launch starts N local ranks like torchrun; SlurmScript
// writes an srun batch script for multi-node runs.
package dist
