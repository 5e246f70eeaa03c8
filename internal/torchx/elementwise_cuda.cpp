//go:build cuda

// Compiling and launching memo's elementwise kernels (elementwise.cu) on a
// GPU: NVRTC compiles the text for the device's architecture on its first
// call, and the CUDA driver loads and launches the result on the device's
// current stream, as libtorch's own run-time-compiled kernels (jiterator)
// do. Both libraries are opened with dlopen, so that memo links to neither:
// a machine without NVRTC keeps libtorch's composition, and says so.
//
// NVRTC is looked for where MEMO_NVRTC names it, then beside the libcudart
// that libtorch loaded (pip's nvidia packages: an NVRTC of libtorch's CUDA,
// which the driver accepts), then under its versioned and plain names on
// the loader's path, then in /usr/local/cuda. NVRTC opens its builtins
// library by bare name when it compiles; where its directory is not on the
// loader's path (pip's nvidia/cu13/lib is not) that fails ("failed to open
// libnvrtc-builtins.so.13.0", a known trap of pip-installed NVRTC), so the
// builtins beside the NVRTC that was opened are loaded first, and NVRTC
// finds them loaded.
#include <dlfcn.h>
#include <glob.h>
#include <link.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <nvrtc.h>

#include "elementwise_loader.h"

namespace memo_elementwise {
namespace {

std::string source;

struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_retain = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set = nullptr;
  decltype(&::cuModuleLoadData) module_load = nullptr;
  decltype(&::cuModuleGetFunction) module_function = nullptr;
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuGetErrorString) error_string = nullptr;
};

struct Compiler {
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
};

// A device's loaded kernels.
// ok is set last, under mu, and read without it: once it is true, ctx and
// functions never change.
struct Loaded {
  std::atomic<bool> ok{false};
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction functions[kernel_count] = {};
};

std::mutex mu;
Driver drv;
Compiler rtc;
bool libraries_tried = false;
std::string libraries_why;
Loaded devices[64];

template <typename F>
bool symbol(void *lib, const char *name, F *out, std::string *why) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr) *why = std::string("no ") + name + " in the library";
  return *out != nullptr;
}

// loaded_dir is the directory of an already loaded library, "" if none.
std::string loaded_dir(const char *name) {
  void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return "";
  struct link_map *map = nullptr;
  std::string dir;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    dir = map->l_name;
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "" : dir.substr(0, slash);
  }
  dlclose(h);
  return dir;
}

// preload_builtins loads NVRTC's builtins library from the directory the
// NVRTC at h came from, where there is one (see the file's comment).
void preload_builtins(void *h) {
  struct link_map *map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return;
  std::string dir = map->l_name;
  size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return;
  dir = dir.substr(0, slash);
  glob_t found;
  if (glob((dir + "/libnvrtc-builtins.so.*").c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; i++) {
      if (dlopen(found.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL) != nullptr) break;
    }
  }
  globfree(&found);
}

void *open_nvrtc(std::string *tried) {
  std::vector<std::string> names;
  if (const char *env = std::getenv("MEMO_NVRTC")) names.push_back(env);
  std::string dir = loaded_dir("libcudart.so.13");
  if (!dir.empty()) names.push_back(dir + "/libnvrtc.so.13");  // nvidia/cu13/lib
  dir = loaded_dir("libcudart.so.12");
  if (!dir.empty()) {
    names.push_back(dir + "/libnvrtc.so.12");
    names.push_back(dir + "/../../cuda_nvrtc/lib/libnvrtc.so.12");  // nvidia/cuda_runtime/lib
  }
  for (const char *n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.push_back(n);
  names.push_back("/usr/local/cuda/lib64/libnvrtc.so");
  for (const std::string &n : names) {
    if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      preload_builtins(h);
      return h;
    }
    *tried += (tried->empty() ? "" : ", ") + n;
  }
  return nullptr;
}

bool open_libraries(std::string *why) {
  if (libraries_tried) {
    *why = libraries_why;
    return libraries_why.empty();
  }
  libraries_tried = true;
  std::string &w = libraries_why;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    w = "no CUDA driver library (libcuda.so.1)";
  } else if (!(symbol(cuda, "cuInit", &drv.init, &w) && symbol(cuda, "cuDeviceGet", &drv.device_get, &w) &&
               symbol(cuda, "cuDeviceGetAttribute", &drv.attribute, &w) &&
               symbol(cuda, "cuDevicePrimaryCtxRetain", &drv.primary_retain, &w) &&
               symbol(cuda, "cuCtxGetCurrent", &drv.ctx_get, &w) && symbol(cuda, "cuCtxSetCurrent", &drv.ctx_set, &w) &&
               symbol(cuda, "cuModuleLoadData", &drv.module_load, &w) &&
               symbol(cuda, "cuModuleGetFunction", &drv.module_function, &w) &&
               symbol(cuda, "cuLaunchKernel", &drv.launch, &w) &&
               symbol(cuda, "cuGetErrorString", &drv.error_string, &w))) {
    w = "CUDA driver: " + w;
  }
  if (!w.empty()) {
    *why = w;
    return false;
  }
  std::string tried;
  void *nv = open_nvrtc(&tried);
  if (nv == nullptr) {
    w = "no NVRTC library (tried " + tried + "; MEMO_NVRTC=PATH names one)";
  } else if (!(symbol(nv, "nvrtcCreateProgram", &rtc.create, &w) && symbol(nv, "nvrtcCompileProgram", &rtc.compile, &w) &&
               symbol(nv, "nvrtcGetProgramLogSize", &rtc.log_size, &w) &&
               symbol(nv, "nvrtcGetProgramLog", &rtc.log, &w) && symbol(nv, "nvrtcGetCUBINSize", &rtc.cubin_size, &w) &&
               symbol(nv, "nvrtcGetCUBIN", &rtc.cubin, &w) && symbol(nv, "nvrtcDestroyProgram", &rtc.destroy, &w) &&
               symbol(nv, "nvrtcGetErrorString", &rtc.error_string, &w))) {
    w = "NVRTC: " + w;
  }
  *why = w;
  return w.empty();
}

std::string cu_error(CUresult r) {
  const char *s = nullptr;
  if (drv.error_string != nullptr) drv.error_string(r, &s);
  return s != nullptr ? s : "CUDA error " + std::to_string(static_cast<int>(r));
}

// compile turns the source into a cubin for compute capability major.minor.
bool compile(int major, int minor, std::vector<char> *cubin, std::string *why) {
  nvrtcProgram prog;
  nvrtcResult r = rtc.create(&prog, source.c_str(), "memo_elementwise.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    *why = std::string("NVRTC: ") + rtc.error_string(r);
    return false;
  }
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor);
  // NVRTC's defaults otherwise, as nvcc's built libtorch's kernels: the
  // source's own arithmetic is explicitly rounded, and CUDA's expf is then
  // libtorch's.
  const char *opts[] = {arch.c_str(), "--std=c++17"};
  r = rtc.compile(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    rtc.log_size(prog, &n);
    std::string log(n, '\0');
    if (n > 0) rtc.log(prog, &log[0]);
    *why = std::string("NVRTC could not compile the kernels for ") + arch + ": " + rtc.error_string(r) + ": " + log;
    rtc.destroy(&prog);
    return false;
  }
  size_t n = 0;
  rtc.cubin_size(prog, &n);
  cubin->resize(n);
  r = rtc.cubin(prog, cubin->data());
  rtc.destroy(&prog);
  if (r != NVRTC_SUCCESS || n == 0) {
    *why = std::string("NVRTC gave no cubin: ") + rtc.error_string(r);
    return false;
  }
  return true;
}

// Current makes a device's context current on this thread (Go may call
// from any thread) for its life, then puts back the one that was: the
// runtime reads the current device from it, and libtorch's calls on this
// thread must find what they left.
class Current {
 public:
  explicit Current(CUcontext ctx) {
    if (drv.ctx_get(&prev_) != CUDA_SUCCESS) prev_ = nullptr;
    if (prev_ == ctx) return;
    CUresult r = drv.ctx_set(ctx);
    if (r != CUDA_SUCCESS) throw std::runtime_error("elementwise kernels: cuCtxSetCurrent: " + cu_error(r));
    switched_ = true;
  }
  ~Current() {
    if (switched_) drv.ctx_set(prev_);
  }
  Current(const Current &) = delete;
  Current &operator=(const Current &) = delete;

 private:
  CUcontext prev_ = nullptr;
  bool switched_ = false;
};

}  // namespace

void set_source(const char *text) {
  std::lock_guard<std::mutex> lock(mu);
  if (source.empty()) source = text;
}

bool ready(int device, std::string *why) {
  Loaded &l = devices[device];
  if (l.ok.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(mu);
  if (l.ok.load(std::memory_order_relaxed)) return true;
  if (source.empty()) {
    *why = "no kernel source was handed to the loader";
    return false;
  }
  if (!open_libraries(why)) return false;
  CUresult r = drv.init(0);
  CUdevice dev;
  if (r == CUDA_SUCCESS) r = drv.device_get(&dev, device);
  int major = 0, minor = 0;
  if (r == CUDA_SUCCESS) r = drv.attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  if (r == CUDA_SUCCESS) r = drv.attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  // The primary context is the one libtorch's runtime calls use.
  if (r == CUDA_SUCCESS) r = drv.primary_retain(&l.ctx, dev);
  if (r != CUDA_SUCCESS) {
    *why = "CUDA driver: " + cu_error(r);
    return false;
  }
  std::vector<char> cubin;
  if (!compile(major, minor, &cubin, why)) return false;
  try {
    Current in(l.ctx);
    if (l.module == nullptr) {
      r = drv.module_load(&l.module, cubin.data());
      if (r != CUDA_SUCCESS) {
        *why = "loading the compiled kernels: " + cu_error(r);
        return false;
      }
    }
    for (int k = 0; k < kernel_count; k++) {
      r = drv.module_function(&l.functions[k], l.module, kernel_names[k]);
      if (r != CUDA_SUCCESS) {
        *why = std::string("the compiled kernels have no ") + kernel_names[k] + ": " + cu_error(r);
        return false;
      }
    }
  } catch (const std::exception &e) {
    *why = e.what();
    return false;
  }
  l.ok.store(true, std::memory_order_release);
  return true;
}

void launch_blocks(int device, Kernel k, long long blocks, unsigned threads, void **args) {
  if (blocks <= 0) return;
  Loaded &l = devices[device];
  if (!l.ok.load(std::memory_order_acquire)) throw std::runtime_error("elementwise kernels: device not ready");
  Current in(l.ctx);
  CUstream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  CUresult r = drv.launch(l.functions[k], static_cast<unsigned>(blocks), 1, 1, threads, 1, 1, 0, stream, args, nullptr);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string("elementwise kernels: launching ") + kernel_names[k] + ": " + cu_error(r));
}

void launch(int device, Kernel k, long long n, void **args) {
  if (n <= 0) return;
  const unsigned threads = 256;
  long long blocks = (n + threads - 1) / threads;
  if (blocks > (1LL << 20)) blocks = 1LL << 20;  // the loops stride over the rest
  launch_blocks(device, k, blocks, threads, args);
}

}  // namespace memo_elementwise
