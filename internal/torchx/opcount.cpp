// Counting libtorch's operator calls, for `memo bench --count-ops`.
//
// Where the host bounds a step (a small batch on a GPU), its time goes in
// calls into libtorch, each a dispatch and often a kernel launch. A global
// RecordFunction callback sees every operator the dispatcher runs, on
// every thread (autograd's too): it counts them by name, and counts as
// outer the calls made from outside any operator (memo's own calls, and
// those of autograd's nodes in a backward pass), where a composite such as
// aten::linear calls aten::matmul, then aten::mm, inside it. Autograd's
// nodes (MmBackward0, ...) are counted apart. The callback is installed
// only while counting: it costs a lock and a map lookup a call.
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/record_function.h>

#include "errmsg.h"
#include "opcount.h"

namespace {

struct Tally {
  int64_t calls = 0, outer = 0;
};

std::mutex mu;
std::map<std::string, Tally> ops;    // FUNCTION scope: operators
std::map<std::string, Tally> nodes;  // BACKWARD_FUNCTION scope: autograd nodes
bool installed = false;
at::CallbackHandle handle = 0;

// Each thread's operator calls open now (autograd nodes not counted).
thread_local int depth = 0;

// A call's context: whether it began outside any operator.
struct Ctx : at::ObserverContext {
  explicit Ctx(bool outer) : outer(outer) {}
  bool outer;
};

// The engine records each node's evaluation in FUNCTION scope too, as
// "autograd::engine::evaluate_function: MmBackward0": not an operator,
// and the node itself is counted in BACKWARD_FUNCTION scope.
bool engineRecord(const at::RecordFunction &fn) { return std::strncmp(fn.name(), "autograd::", 10) == 0; }

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction &fn) {
  const bool op = fn.scope() == at::RecordScope::FUNCTION;
  if (op && engineRecord(fn)) return nullptr;
  auto ctx = std::make_unique<Ctx>(op && depth == 0);
  if (op) depth++;
  return ctx;
}

void onEnd(const at::RecordFunction &fn, at::ObserverContext *ctx) {
  const bool op = fn.scope() == at::RecordScope::FUNCTION;
  if (op && engineRecord(fn)) return;
  if (op && depth > 0) depth--;
  const bool outer = ctx != nullptr && static_cast<Ctx *>(ctx)->outer;
  std::lock_guard<std::mutex> lock(mu);
  Tally &t = (op ? ops : nodes)[fn.name()];
  t.calls++;
  if (outer) t.outer++;
}

void write(std::ostringstream &out, const char *kind, const std::map<std::string, Tally> &table) {
  for (const auto &kv : table) out << kind << '\t' << kv.first << '\t' << kv.second.calls << '\t' << kv.second.outer << '\n';
}

}  // namespace

extern "C" {

// memo_opcount_start clears the counts and starts counting. Returns 0, or
// -1 with *err when counting is already on or libtorch refused.
int memo_opcount_start(char **err) {
  try {
    std::lock_guard<std::mutex> lock(mu);
    if (installed) {
      *err = memo_copy_message("operator counting is already on");
      return -1;
    }
    ops.clear();
    nodes.clear();
    handle = at::addGlobalCallback(at::RecordFunctionCallback(onStart, onEnd)
                                       .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    installed = true;
    return 0;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return -1;
  }
}

// memo_opcount_stop stops counting and returns the counts as malloc'd
// text, a line a name: "op" or "node", the name, calls, outer calls, separated
// by tabs. Empty when counting was off.
char *memo_opcount_stop(void) {
  std::ostringstream out;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (installed) {
      at::removeCallback(handle);
      installed = false;
    }
    write(out, "op", ops);
    write(out, "node", nodes);
  }
  return memo_copy_message(out.str());
}
}
