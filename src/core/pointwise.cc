// The pointwise table: a fixed array published by an atomic count, so kernels read entries without
// a lock while a registry block adds one.
#include "pointwise.h"

#include <atomic>
#include <mutex>
#include <vector>

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

// Validates the program and assigns scratch registers, reusing one once its value's last reader
// has run (a chain of any length needs one or two).
FusedProgram fused_compile(int nin, int nprog, const int64_t* prog) {
  check_fused_program(nin, nprog, prog);
  FusedProgram fp;
  fp.nin = nin;
  int nsteps = nprog / 3, nval = nin + nsteps;
  std::vector<int> last_use(size_t(nval), -1);
  fp.steps.resize(size_t(nsteps));
  for (int s = 0; s < nsteps; ++s) {
    FusedStep& st = fp.steps[size_t(s)];
    st.k = pointwise_at(int(prog[3 * s]));
    st.a = int(prog[3 * s + 1]);
    st.b = st.k->arity == 2 ? int(prog[3 * s + 2]) : -1;
    last_use[size_t(st.a)] = s;
    if (st.b >= 0) last_use[size_t(st.b)] = s;
  }
  std::vector<int> free_regs, reg_of(size_t(nval), -1);
  for (int s = 0; s < nsteps; ++s) {
    FusedStep& st = fp.steps[size_t(s)];
    if (s == nsteps - 1) {
      st.reg = -1;
      break;
    }
    for (int v : {st.a, st.b})  // operands read for the last time free their registers first
      if (v >= nin && last_use[size_t(v)] == s && reg_of[size_t(v)] >= 0) {
        free_regs.push_back(reg_of[size_t(v)]);
        reg_of[size_t(v)] = -1;
      }
    if (free_regs.empty()) {
      st.reg = fp.nregs++;
    } else {
      st.reg = free_regs.back();
      free_regs.pop_back();
    }
    reg_of[size_t(nin + s)] = st.reg;
  }
  return fp;
}

}  // namespace mf
