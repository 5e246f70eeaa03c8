// What gotch v0.9.1 does not wrap: seeding libtorch's default generator and
// setting its intra-op thread count.
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/torch.h>

#include "shim.h"

extern "C" {
void memo_manual_seed(uint64_t seed) { torch::manual_seed(seed); }
void memo_set_num_threads(int n) { at::set_num_threads(n); }
int memo_get_num_threads(void) { return at::get_num_threads(); }
void memo_release_free_memory(void) { malloc_trim(0); }
// libtorch's build configuration and, on its last lines, the CPU
// capability its vectorized kernels dispatch to here (malloc'd).
char *memo_show_config(void) { return strdup(at::show_config().c_str()); }
// The kernel OpenBLAS picked for this CPU (Haswell, SkylakeX, ...), when
// the process has OpenBLAS loaded (Debian's libtorch does), else NULL.
const char *memo_openblas_core(void) {
  auto f = reinterpret_cast<char *(*)(void)>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return f == nullptr ? nullptr : f();
}
}
