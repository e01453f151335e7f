// Fused kernels from strings without a GPU (issue 16, item 4): the code generator turns fused programs
// into CUDA C++ source, NVRTC compiles every one to PTX (it needs no device), and the cache returns one
// module per (architecture, text). Loading and launching the PTX are the GPU checks'
// (scripts/gpu/check.sh). Built only when the CUDA backend is (MF_HAVE_CUDA).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/pointwise.h"
#include "kernels/cuda/backend.h"
#include "kernels/cuda/fused_codegen.h"
#include "kernels/cuda/fused_jit.h"
#include "op/registry.h"

namespace {

int code_of(const char* op) {
  mf::register_builtin_ops();
  const mf::OpDef* d = mf::Registry::get().find(op);
  REQUIRE(d != nullptr);
  REQUIRE(d->pointwise_ >= 0);
  return d->pointwise_;
}

mf::FusedProgram program(int nin, const std::vector<int64_t>& prog) {
  return mf::fused_compile(nin, int(prog.size()), prog.data());
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("cuda codegen: every fusable op compiles with NVRTC in float32 and float64", "[cuda]") {
  mf::register_builtin_ops();
  // each fusable entry of the table, once, in a program of its own: x (and y) -> op
  int tried = 0;
  for (int code = 0; mf::pointwise_at(code); ++code) {
    const mf::PointwiseKernels* k = mf::pointwise_at(code);
    if (!k->fusable) continue;
    INFO("op " << k->name);
    REQUIRE(k->cuda != nullptr);  // every built-in fusable functor has its CUDA source
    mf::FusedProgram fp = k->arity == 1 ? program(1, {code, 0, 0}) : program(2, {code, 0, 1});
    for (int dt : {int(MF_FLOAT32), int(MF_FLOAT64)}) {
      std::string src = mf::cuda::fused_source(fp, dt);
      CHECK(contains(src, std::string("mf_op_") + k->name));
      CHECK(contains(src, dt == MF_FLOAT32 ? "typedef float T;" : "typedef double T;"));
      const mf::cuda::FusedModule& m = mf::cuda::fused_module(src, 90);
      CHECK(contains(m.ptx(), std::string(".entry ") + mf::cuda::kFusedKernelName));
      CHECK(contains(m.ptx(), ".target sm_90"));
    }
    ++tried;
  }
  CHECK(tried >= 27);  // 19 unary + 8 binary built-in fusable ops
}

TEST_CASE("cuda codegen: a chain reads values by step, reuses a function per op and stores the last step", "[cuda]") {
  // w - lr * (g + wd * w): inputs w (0), g (1), lr (2), wd (3)
  int mul = code_of("mul"), add = code_of("add"), sub = code_of("sub");
  mf::FusedProgram fp = program(4, {mul, 3, 0, add, 1, 4, mul, 2, 5, sub, 0, 6});
  std::string src = mf::cuda::fused_source(fp, MF_FLOAT32);
  CHECK(contains(src, "const T v4 = mf_op_mul<T>(v3, v0);"));
  CHECK(contains(src, "const T v5 = mf_op_add<T>(v1, v4);"));
  CHECK(contains(src, "const T v6 = mf_op_mul<T>(v2, v5);"));
  CHECK(contains(src, "const T v7 = mf_op_sub<T>(v0, v6);"));
  CHECK(contains(src, "static_cast<T*>(a.out)[i] = v7;"));
  // one device function per distinct op
  size_t first = src.find("mf_op_mul(A x, A y)");
  REQUIRE(first != std::string::npos);
  CHECK(src.find("mf_op_mul(A x, A y)", first + 1) == std::string::npos);
  // the argument block is the host's declaration, pasted
  CHECK(contains(src, "struct MfFusedArgs"));
  CHECK(contains(src, "long long stride[32][8];"));
  const mf::cuda::FusedModule& m = mf::cuda::fused_module(src, 90);
  CHECK(!m.ptx().empty());
}

TEST_CASE("cuda codegen: a long program over every unary and binary op compiles", "[cuda]") {
  // a chain x -> op1 -> op2 -> ... through all fusable ops (binary ones take y as their b), 2 inputs
  mf::register_builtin_ops();
  std::vector<int64_t> prog;
  int last = 0, nin = 2, steps = 0;
  for (int code = 0; mf::pointwise_at(code); ++code) {
    const mf::PointwiseKernels* k = mf::pointwise_at(code);
    if (!k->fusable) continue;
    prog.insert(prog.end(), {code, last, 1});
    last = nin + steps++;
  }
  mf::FusedProgram fp = program(nin, prog);
  std::string src = mf::cuda::fused_source(fp, MF_FLOAT64);
  const mf::cuda::FusedModule& m = mf::cuda::fused_module(src, 80);  // another architecture: its own entry
  CHECK(contains(m.ptx(), ".target sm_80"));
}

TEST_CASE("cuda codegen: the cache returns the same module for the same text, another for another", "[cuda]") {
  int add = code_of("add"), exp = code_of("exp");
  mf::FusedProgram a = program(2, {add, 0, 1, exp, 2, 0});
  mf::FusedProgram b = program(2, {add, 0, 1, exp, 2, 0});  // an equal program compiled apart
  mf::FusedProgram c = program(2, {add, 1, 0, exp, 2, 0});
  std::string sa = mf::cuda::fused_source(a, MF_FLOAT32), sb = mf::cuda::fused_source(b, MF_FLOAT32);
  CHECK(sa == sb);  // deterministic text: the cache key
  size_t before = mf::cuda::fused_cache_size();
  const mf::cuda::FusedModule& ma = mf::cuda::fused_module(sa, 90);
  size_t after_first = mf::cuda::fused_cache_size();
  CHECK(after_first <= before + 1);
  const mf::cuda::FusedModule& mb = mf::cuda::fused_module(sb, 90);
  CHECK(&ma == &mb);
  CHECK(mf::cuda::fused_cache_size() == after_first);
  const mf::cuda::FusedModule& mc = mf::cuda::fused_module(mf::cuda::fused_source(c, MF_FLOAT32), 90);
  CHECK(&mc != &ma);
  const mf::cuda::FusedModule& m64 = mf::cuda::fused_module(mf::cuda::fused_source(a, MF_FLOAT64), 90);
  CHECK(&m64 != &ma);
  CHECK(mf::cuda::fused_cache_size() >= after_first + 2);
}

TEST_CASE("cuda codegen: bad requests are clear errors", "[cuda]") {
  int add = code_of("add");
  mf::FusedProgram fp = program(2, {add, 0, 1});
  CHECK_THROWS_WITH(mf::cuda::fused_source(fp, MF_INT32), Catch::Contains("float32 and float64") &&
                                                              Catch::Contains("int32"));
  // source that does not compile: NVRTC's log comes back in the message
  CHECK_THROWS_WITH(mf::cuda::fused_module("extern \"C\" __global__ void mf_fused() { undeclared_thing(); }", 90),
                    Catch::Contains("NVRTC") && Catch::Contains("undeclared_thing"));
}

// cuBLAS and NVRTC are opened on first use (src/kernels/cuda/lazy_libs.cc), not linked: every routine
// the backend calls must be in the libraries found the way the backend finds them.
TEST_CASE("cuda libraries: cuBLAS and NVRTC load on first use with every routine the backend calls", "[cuda]") {
  CHECK(mf::cuda::lazy_libs_check() == "");
}
