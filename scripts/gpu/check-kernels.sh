#!/bin/bash
# Compiles memo's elementwise kernels (internal/torchx/elementwise.cu) as
# CUDA device code with clang, on a machine without a GPU or the CUDA
# toolkit: a check that the text NVRTC will compile on a GPU's first call
# is valid CUDA (device annotations, templates, the kernels' C names and
# parameters), before any GPU is lent. NVRTC's own built-ins are declared
# here; clang 14 or later (Debian: apt-get install clang). Prints the
# kernels' entry points and their parameter blocks; exits non-zero if
# clang rejects the source or an entry point the loader looks up
# (elementwise_loader.h's kernel_names) is missing.
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
clang=${CLANG:-clang++}
command -v "$clang" >/dev/null || { echo "check-kernels: no $clang (apt-get install clang)" >&2; exit 2; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
{
	cat <<'PRELUDE'
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __forceinline__ __attribute__((always_inline)) inline
#define __shared__ __attribute__((shared))
#include <__clang_cuda_builtin_vars.h>
__device__ void __syncthreads();
__device__ float __fsqrt_rn(float);
__device__ float __uint_as_float(unsigned int);
__device__ unsigned int __float_as_uint(float);
__device__ float __fmul_rn(float, float);
__device__ float __fadd_rn(float, float);
__device__ float __fdiv_rn(float, float);
__device__ float __fmaf_rn(float, float, float);
__device__ float expf(float);
__device__ float logf(float);
__device__ float fmaxf(float, float);
PRELUDE
	cat "$here/internal/torchx/elementwise.cu"
} >"$w/k.cu"
"$clang" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -std=c++17 -O2 -Wall -S -o "$w/k.ptx" "$w/k.cu"
# The names the loader resolves, from its table.
want=$(sed -n '/kernel_names\[\] = {/,/};/p' "$here/internal/torchx/elementwise_loader.h" | grep -o '"memo_[a-z0-9_]*"' | tr -d '"')
n=$(echo $want | wc -w)
((n > 0)) || { echo "check-kernels: no kernel names in elementwise_loader.h" >&2; exit 1; }
missing=0
for k in $want; do
	grep -q "\.entry $k(" "$w/k.ptx" || { echo "check-kernels: no entry point $k" >&2; missing=1; }
done
grep -A8 '\.entry' "$w/k.ptx" | grep -E '\.entry|\.param' | sed 's/^[[:space:]]*//'
((missing == 0)) && echo "check-kernels: $n entry points compiled for sm_80"
exit $missing
