//go:build cuda

// CUDA graphs (at::cuda::CUDAGraph) for memo's fixed-shape decode steps,
// and the side stream they are captured on (CUDA builds only). A graph is
// captured on a stream other than the default one; the work before its
// first capture runs once on that same stream, so that what libtorch
// makes lazily for a stream (cuBLAS's workspace) exists before capture
// rather than inside it. Entering the side stream makes it wait for the
// work queued on the current one, and leaving makes the current one wait
// for it, so the two keep the order of the host's calls. The capture is
// thread-local: calls from other threads (Go's collector freeing tensors)
// are not captured and do not break it; the caller keeps its goroutine on
// one OS thread, whose current stream this is.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Event.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <map>
#include <mutex>
#include <optional>

#include "cudagraph.h"
#include "errmsg.h"

namespace {

// sideStream is one pool stream per device, the same at every call.
c10::cuda::CUDAStream sideStream(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, c10::cuda::getStreamFromPool(false, device)).first;
  return it->second;
}

// waitFor makes stream `waiter` wait for the work queued on `on` so far.
void waitFor(const c10::cuda::CUDAStream &waiter, const c10::cuda::CUDAStream &on) {
  c10::Event ev(c10::DeviceType::CUDA);
  ev.record(on.unwrap());
  ev.block(waiter.unwrap());
}

struct SideState {
  c10::cuda::CUDAStream prev, side;
};

struct Graph {
  at::cuda::CUDAGraph graph;
  std::optional<SideState> state;
};

SideState enter(c10::DeviceIndex device) {
  c10::cuda::set_device(device);
  SideState st{c10::cuda::getCurrentCUDAStream(device), sideStream(device)};
  waitFor(st.side, st.prev);
  c10::cuda::setCurrentCUDAStream(st.side);
  return st;
}

void leave(const SideState &st) {
  c10::cuda::setCurrentCUDAStream(st.prev);
  waitFor(st.prev, st.side);
}

}  // namespace

extern "C" {

void *memo_side_stream_enter(int device, char **err) {
  try {
    return new SideState(enter(static_cast<c10::DeviceIndex>(device)));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

int memo_side_stream_leave(void *p, char **err) {
  auto *st = static_cast<SideState *>(p);
  try {
    leave(*st);
    delete st;
    return 0;
  } catch (const std::exception &e) {
    delete st;
    *err = memo_copy_message(e.what());
    return -1;
  }
}

void *memo_graph_capture_begin(int device, char **err) {
  auto *g = new Graph();
  try {
    g->state = enter(static_cast<c10::DeviceIndex>(device));
    g->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    return g;
  } catch (const std::exception &e) {
    if (g->state) c10::cuda::setCurrentCUDAStream(g->state->prev);
    delete g;
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

// memo_graph_capture_end ends the capture and returns to the stream
// current before it, also when the capture failed (then -1, and the
// graph is to be freed, not replayed).
int memo_graph_capture_end(void *p, char **err) {
  auto *g = static_cast<Graph *>(p);
  int rc = 0;
  try {
    g->graph.capture_end();
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    rc = -1;
  }
  try {
    leave(*g->state);
  } catch (const std::exception &e) {
    if (rc == 0) *err = memo_copy_message(e.what());
    rc = -1;
  }
  return rc;
}

int memo_graph_replay(void *p, char **err) {
  try {
    static_cast<Graph *>(p)->graph.replay();
    return 0;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return -1;
  }
}

void memo_graph_free(void *p) {
  try {
    delete static_cast<Graph *>(p);
  } catch (...) {
  }
}
}
