//go:build !cuda

// Without the cuda tag memo has no GPU kernels to load: every tensor a
// GPU holds takes libtorch's composition (elementwise.cpp).
#include <stdexcept>
#include <string>

#include "elementwise_loader.h"

namespace memo_elementwise {

void set_source(const char *) {}

bool ready(int, std::string *why) {
  *why = "memo was built without the cuda tag";
  return false;
}

void launch(int, Kernel, long long, void **) {
  throw std::logic_error("elementwise kernels: launch in a build without the cuda tag");
}

void launch_blocks(int, Kernel, long long, unsigned, void **) {
  throw std::logic_error("elementwise kernels: launch in a build without the cuda tag");
}

}  // namespace memo_elementwise
