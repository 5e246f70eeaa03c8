// The GPU side of elementwise.cpp: elementwise_cuda.cpp compiles the
// kernels with NVRTC and launches them; elementwise_nocuda.cpp, in a build
// without the cuda tag, has none.
#ifndef MEMO_TORCHX_ELEMENTWISE_LOADER_H
#define MEMO_TORCHX_ELEMENTWISE_LOADER_H
#include <string>

namespace memo_elementwise {

// set_source keeps the kernels' text for the first compilation.
void set_source(const char *text);

// ready reports whether device's kernels are compiled and loaded
// (compiling them on the first call), else sets *why.
bool ready(int device, std::string *why);

// launch runs kernel name over n work items with args (pointers to each
// argument, as cuLaunchKernel takes them) on device's current stream.
void launch(int device, const char *name, long long n, void **args);

}  // namespace memo_elementwise
#endif
