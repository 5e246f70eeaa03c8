// What gotch v0.9.1 does not wrap: seeding libtorch's default generator and
// setting its intra-op thread count.
#include <malloc.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "shim.h"

extern "C" {
void memo_manual_seed(uint64_t seed) { torch::manual_seed(seed); }
void memo_set_num_threads(int n) { at::set_num_threads(n); }
int memo_get_num_threads(void) { return at::get_num_threads(); }
void memo_release_free_memory(void) { malloc_trim(0); }
}
