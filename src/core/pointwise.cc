// The pointwise table: a fixed array published by an atomic count, so kernels read entries without
// a lock while a registry block adds one.
#include "pointwise.h"

#include <atomic>
#include <mutex>

#include "error.h"

namespace mf {

namespace {
PointwiseKernels g_table[kMaxPointwise];
std::atomic<int> g_count{0};
std::mutex g_add;
}  // namespace

int pointwise_add(const PointwiseKernels& k) {
  std::lock_guard<std::mutex> lock(g_add);
  int code = g_count.load(std::memory_order_relaxed);
  if (code >= kMaxPointwise) fail(k.name, ": the pointwise table is full (", kMaxPointwise, " ops)");
  g_table[code] = k;
  g_count.store(code + 1, std::memory_order_release);
  return code;
}

const PointwiseKernels* pointwise_at(int code) {
  return code >= 0 && code < g_count.load(std::memory_order_acquire) ? &g_table[code] : nullptr;
}

void check_fused_program(int nin, int nprog, const int64_t* prog) {
  const char* op = "fused_elementwise";
  if (nin < 1 || nin > kFusedMaxInputs) fail(op, ": ", nin, " inputs; expected 1..", kFusedMaxInputs);
  if (nprog <= 0 || nprog % 3 != 0)
    fail(op, ": program has ", nprog, " numbers; expected a non-empty list of (op, a, b) triples");
  for (int s = 0; s < nprog / 3; ++s) {
    int64_t code = prog[3 * s];
    const PointwiseKernels* k = code == int64_t(int(code)) ? pointwise_at(int(code)) : nullptr;
    if (!k || !k->fusable)
      fail(op, ": step ", s + 1, " has op code ", code, k ? std::string(" (") + k->name + ")" : std::string(),
           "; expected the code of a fusable pointwise op (mf.kernels.U: unary without params, mf.kernels.B: "
           "binary but comparisons)");
    for (int j = 1; j <= k->arity; ++j) {
      int64_t v = prog[3 * s + j];
      if (v < 0 || v >= nin + s)
        fail(op, ": step ", s + 1, " (", k->name, ") reads value ", v, " as ", j == 1 ? "a" : "b", "; expected 0..",
             nin + s - 1, " (inputs first, then earlier steps)");
    }
  }
}

}  // namespace mf
