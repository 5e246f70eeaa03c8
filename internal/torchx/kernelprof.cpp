// Device time by kernel, for `memo bench train --profile-kernels`.
//
// --count-ops says how many calls the host makes; where a step is bound by
// the GPU instead (a large batch), what matters is which kernels take its
// time. libtorch's Kineto profiler (CUPTI on a GPU) records every kernel
// with its duration on the device; this sums them by name. On the CPU it
// records the operators run on the calling thread, each with its time
// including the operators it calls (no kernels there to record).
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include "errmsg.h"
#include "kernelprof.h"

namespace {

namespace kprof = torch::autograd::profiler;
namespace pimpl = torch::profiler::impl;

bool profiling = false;

uint64_t durationNs(const kprof::KinetoEvent &e) {
#if TORCH_VERSION_MAJOR >= 2
  return e.durationNs();
#else
  return e.durationUs() * 1000;
#endif
}

}  // namespace

extern "C" {

// memo_kernelprof_start starts recording the calling thread's operators
// and, with cuda set, every CUDA kernel. Returns 0, or -1 with *err.
int memo_kernelprof_start(int cuda, char **err) {
  try {
    if (profiling) {
      *err = memo_copy_message("kernel profiling is already on");
      return -1;
    }
    pimpl::ProfilerConfig config(pimpl::ProfilerState::KINETO);
    std::set<pimpl::ActivityType> activities{pimpl::ActivityType::CPU};
    if (cuda) activities.insert(pimpl::ActivityType::CUDA);
    kprof::prepareProfiler(config, activities);
    kprof::enableProfiler(config, activities);
    profiling = true;
    return 0;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return -1;
  }
}

// memo_kernelprof_stop stops recording and returns malloc'd text, a line
// a (device, name): "cuda" or "cpu", the name, events, total nanoseconds,
// tab-separated. NULL with *err when recording was off or libtorch failed.
char *memo_kernelprof_stop(char **err) {
  try {
    if (!profiling) {
      *err = memo_copy_message("kernel profiling is not on");
      return nullptr;
    }
    profiling = false;
    auto result = kprof::disableProfiler();
    std::map<std::pair<std::string, std::string>, std::pair<int64_t, uint64_t>> sums;
    for (const auto &e : result->events()) {
      const char *dev = e.deviceType() == c10::DeviceType::CUDA ? "cuda" : "cpu";
      auto &s = sums[{dev, e.name()}];
      s.first++;
      s.second += durationNs(e);
    }
    std::ostringstream out;
    for (const auto &kv : sums) {
      std::string name = kv.first.second;
      for (char &c : name)
        if (c == '\t' || c == '\n') c = ' ';  // one line a name, whatever the kernel's
      out << kv.first.first << '\t' << name << '\t' << kv.second.first << '\t' << kv.second.second << '\n';
    }
    return memo_copy_message(out.str());
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}
}
