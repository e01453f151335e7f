// Core checks against independent expectations: shape arithmetic and its messages, dtype rules,
// Philox4x32-10 against Random123's published vectors, and the C ABI's no-throw error reporting.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "lua/capi.h"
#include "op/registry.h"

using Catch::Contains;
using mf::Shape;

// -- shapes --------------------------------------------------------------------------------------

TEST_CASE("core: shape_str", "[core][shape]") {
  CHECK(mf::shape_str(Shape{2, 3}) == "2x3");
  CHECK(mf::shape_str(Shape{7}) == "7");
  CHECK(mf::shape_str(Shape{}) == "scalar");
  CHECK(mf::shape_str(Shape{1, 0, 4}) == "1x0x4");
}

TEST_CASE("core: broadcast_shapes follows NumPy's rule", "[core][shape]") {
  CHECK(mf::broadcast_shapes("add", {2, 1, 3}, {4, 1}) == Shape{2, 4, 3});
  CHECK(mf::broadcast_shapes("add", {4, 1}, {2, 1, 3}) == Shape{2, 4, 3});
  CHECK(mf::broadcast_shapes("add", {}, {3}) == Shape{3});
  CHECK(mf::broadcast_shapes("add", {}, {}) == Shape{});
  CHECK(mf::broadcast_shapes("add", {5, 1}, {1}) == Shape{5, 1});
  CHECK(mf::broadcast_shapes("add", {2, 3}, {2, 3}) == Shape{2, 3});
  CHECK(mf::broadcast_shapes("add", {1, 1}, {1}) == Shape{1, 1});
  CHECK(mf::broadcast_shapes("mul", {8, 1, 6, 1}, {7, 1, 5}) == Shape{8, 7, 6, 5});
  // a size-0 dim broadcasts against 1 and stays 0
  CHECK(mf::broadcast_shapes("add", {0, 3}, {1, 3}) == Shape{0, 3});
  CHECK(mf::broadcast_shapes("add", {0}, {1}) == Shape{0});
}

TEST_CASE("core: broadcast_shapes error names the op and both shapes", "[core][shape]") {
  std::string m;
  try {
    mf::broadcast_shapes("add", {2, 3}, {4, 3});
  } catch (const mf::Error& e) {
    m = e.what();
  }
  CHECK_THAT(m, Contains("add: a is 2x3, b is 4x3"));
  CHECK_THAT(m, Contains("dim 1"));  // 1-based, as Lua users count

  try {
    mf::broadcast_shapes("sub", {5, 2}, {3});
  } catch (const mf::Error& e) {
    m = e.what();
  }
  CHECK_THAT(m, Contains("sub: a is 5x2, b is 3"));
  CHECK_THAT(m, Contains("dim 2"));

  try {
    mf::broadcast_shapes("matmul", {2}, {3}, "a's batch dims", "b's batch dims");
  } catch (const mf::Error& e) {
    m = e.what();
  }
  CHECK_THAT(m, Contains("matmul: a's batch dims is 2, b's batch dims is 3"));

  CHECK_THROWS_AS(mf::broadcast_shapes("add", {0}, {3}), mf::Error);  // 0 is not 1
  CHECK_THROWS_WITH(mf::broadcast_shapes("where", {2}, {3}), Contains("where: a is 2, b is 3"));
}

TEST_CASE("core: checked_numel counts elements and rejects bad shapes", "[core][shape]") {
  CHECK(mf::checked_numel({2, 3, 4}, "t") == 24);
  CHECK(mf::checked_numel({}, "t") == 1);
  CHECK(mf::checked_numel({0, 5}, "t") == 0);
  CHECK(mf::checked_numel({1, 1, 1, 1, 1, 1, 1, 1}, "t") == 1);  // 8 dims is the maximum
  CHECK(mf::checked_numel({int64_t(1) << 31, int64_t(1) << 31}, "t") == int64_t(1) << 62);
  CHECK(mf::checked_numel({std::numeric_limits<int64_t>::max()}, "t") == std::numeric_limits<int64_t>::max());
  // 3037000499^2 = 9223372030926249001 fits in int64; 3037000500^2 = 9223372037000250000 does not
  CHECK(mf::checked_numel({3037000499LL, 3037000499LL}, "t") == 9223372030926249001LL);

  CHECK_THROWS_WITH(mf::checked_numel({2, -3}, "zeros"),
                    Contains("zeros:") && Contains("-3") && Contains("dim 2") && Contains("negative"));
  CHECK_THROWS_WITH(mf::checked_numel(Shape(9, 1), "reshape"), Contains("reshape:") && Contains("9 dims") && Contains("8"));
  CHECK_THROWS_WITH(mf::checked_numel({3037000500LL, 3037000500LL}, "ones"), Contains("ones:") && Contains("too many elements"));
  CHECK_THROWS_WITH(mf::checked_numel({int64_t(1) << 32, int64_t(1) << 32}, "t"), Contains("4294967296x4294967296"));
  CHECK_THROWS_AS(mf::checked_numel({std::numeric_limits<int64_t>::max(), 2}, "t"), mf::Error);
}

TEST_CASE("core: contiguous_strides are row-major", "[core][shape]") {
  CHECK(mf::contiguous_strides({2, 3, 4}) == Shape{12, 4, 1});
  CHECK(mf::contiguous_strides({5}) == Shape{1});
  CHECK(mf::contiguous_strides({}) == Shape{});
  CHECK(mf::contiguous_strides({3, 1, 2}) == Shape{2, 2, 1});
  // a 0-sized dim counts as 1 for the strides of the dims before it (as PyTorch does)
  CHECK(mf::contiguous_strides({2, 0, 3}) == Shape{3, 3, 1});
}

TEST_CASE("core: set_meta and is_contiguous", "[core][shape]") {
  mf_tensor t{};
  mf::set_meta(t, {2, 3}, MF_FLOAT64, MF_CPU);
  CHECK(t.ndim == 2);
  CHECK(t.count == 6);
  CHECK(t.shape[0] == 2);
  CHECK(t.shape[1] == 3);
  CHECK(t.strides[0] == 3);
  CHECK(t.strides[1] == 1);
  CHECK(t.is_contig == 1);
  CHECK(t.dtype_id == MF_FLOAT64);
  CHECK(mf::shape_str(t) == "2x3");
  // the transpose of a 2x3 is a 3x2 with strides (1, 3): not contiguous
  mf::set_strided(t, {3, 2}, {1, 3}, 0);
  CHECK(t.is_contig == 0);
  CHECK_FALSE(mf::is_contiguous(t));
  // size-1 dims may carry any stride
  mf::set_strided(t, {1, 3}, {99, 1}, 2);
  CHECK(t.is_contig == 1);
  CHECK(t.offset == 2);
}

TEST_CASE("core: normalize_dim maps 1-based and negative dims to 0-based", "[core][shape]") {
  CHECK(mf::normalize_dim("sum", 1, 3) == 0);
  CHECK(mf::normalize_dim("sum", 3, 3) == 2);
  CHECK(mf::normalize_dim("sum", -1, 3) == 2);
  CHECK(mf::normalize_dim("sum", -3, 3) == 0);
  // allow_end: one past the last dim is a valid position (unsqueeze at the end)
  CHECK(mf::normalize_dim("unsqueeze", 3, 2, true) == 2);
  CHECK(mf::normalize_dim("unsqueeze", -1, 2, true) == 2);
  CHECK(mf::normalize_dim("unsqueeze", -3, 2, true) == 0);
  CHECK(mf::normalize_dim("unsqueeze", 1, 0, true) == 0);

  CHECK_THROWS_WITH(mf::normalize_dim("sum", 4, 3), Contains("sum:") && Contains("dim 4") && Contains("1..3") && Contains("-3..-1"));
  CHECK_THROWS_WITH(mf::normalize_dim("sum", 0, 3), Contains("sum:") && Contains("dim 0"));
  CHECK_THROWS_WITH(mf::normalize_dim("sum", -4, 3), Contains("dim -4"));
  CHECK_THROWS_WITH(mf::normalize_dim("softmax", 1, 0), Contains("softmax:") && Contains("0-dim"));
  CHECK_THROWS_WITH(mf::normalize_dim("unsqueeze", 4, 2, true), Contains("1..3"));
  CHECK_THROWS_AS(mf::normalize_dim("sum", std::numeric_limits<int64_t>::min(), 3), mf::Error);
  CHECK_THROWS_AS(mf::normalize_dim("sum", std::numeric_limits<int64_t>::max(), 3), mf::Error);
}

// -- dtypes --------------------------------------------------------------------------------------

TEST_CASE("core: dtype names, sizes and parsing", "[core][dtype]") {
  CHECK(std::string(mf::dtype_name(MF_FLOAT32)) == "float32");
  CHECK(std::string(mf::dtype_name(MF_FLOAT64)) == "float64");
  CHECK(std::string(mf::dtype_name(MF_INT32)) == "int32");
  CHECK(std::string(mf::dtype_name(MF_INT64)) == "int64");
  CHECK(std::string(mf::dtype_name(MF_UINT8)) == "uint8");
  CHECK(std::string(mf::dtype_name(99)) == "invalid");
  CHECK(mf::dtype_size(MF_FLOAT32) == 4);
  CHECK(mf::dtype_size(MF_FLOAT64) == 8);
  CHECK(mf::dtype_size(MF_INT32) == 4);
  CHECK(mf::dtype_size(MF_INT64) == 8);
  CHECK(mf::dtype_size(MF_UINT8) == 1);
  CHECK(mf_dtype_size(MF_INT64) == 8);
  CHECK(mf::dtype_valid(MF_UINT8));
  CHECK_FALSE(mf::dtype_valid(-1));
  CHECK_FALSE(mf::dtype_valid(5));
  CHECK(mf::dtype_is_float(MF_FLOAT64));
  CHECK_FALSE(mf::dtype_is_float(MF_INT64));

  CHECK(mf::dtype_from_name("float32") == MF_FLOAT32);
  CHECK(mf::dtype_from_name("double") == MF_FLOAT64);
  CHECK(mf::dtype_from_name("long") == MF_INT64);
  CHECK(mf::dtype_from_name("byte") == MF_UINT8);
  CHECK(mf::dtype_from_name("int") == MF_INT32);
  CHECK_THROWS_WITH(mf::dtype_from_name("half"), Contains("'half'") && Contains("float32, float64, int32, int64, uint8"));
}

TEST_CASE("core: dtype promotion", "[core][dtype]") {
  struct { int a, b, want; } cases[] = {
      {MF_FLOAT32, MF_FLOAT32, MF_FLOAT32}, {MF_FLOAT32, MF_FLOAT64, MF_FLOAT64}, {MF_FLOAT32, MF_INT64, MF_FLOAT32},
      {MF_FLOAT32, MF_INT32, MF_FLOAT32},   {MF_FLOAT32, MF_UINT8, MF_FLOAT32},   {MF_FLOAT64, MF_INT64, MF_FLOAT64},
      {MF_FLOAT64, MF_UINT8, MF_FLOAT64},   {MF_INT32, MF_INT64, MF_INT64},       {MF_UINT8, MF_INT32, MF_INT32},
      {MF_UINT8, MF_INT64, MF_INT64},       {MF_UINT8, MF_UINT8, MF_UINT8},       {MF_INT64, MF_INT64, MF_INT64},
  };
  for (auto& c : cases) {
    INFO(mf::dtype_name(c.a) << " with " << mf::dtype_name(c.b));
    CHECK(mf::promote_types(c.a, c.b) == c.want);
    CHECK(mf::promote_types(c.b, c.a) == c.want);  // symmetric
  }
}

// -- Philox4x32-10 -------------------------------------------------------------------------------

namespace {

// An independent Philox4x32-10 on the full 4x32 counter and 2x32 key, written from Salmon et al. (SC'11):
// ten rounds of two 32x32->64 multiplies, the key bumped by the Weyl constants between rounds.
void philox_reference(uint32_t ctr[4], uint32_t key[2]) {
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t prod0 = uint64_t(0xD2511F53u) * ctr[0];
    uint64_t prod1 = uint64_t(0xCD9E8D57u) * ctr[2];
    uint32_t hi0 = uint32_t(prod0 >> 32), lo0 = uint32_t(prod0);
    uint32_t hi1 = uint32_t(prod1 >> 32), lo1 = uint32_t(prod1);
    uint32_t out[4] = {hi1 ^ ctr[1] ^ k0, lo1, hi0 ^ ctr[3] ^ k1, lo0};
    std::memcpy(ctr, out, sizeof out);
  }
}

struct Kat {
  uint32_t ctr[4], key[2], want[4];
};

// Random123 tests/kat_vectors, the three philox4x32 10-round lines.
const Kat kKats[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000}, {0x00000000, 0x00000000}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

}  // namespace

TEST_CASE("core: the reference Philox reproduces Random123's known answers", "[core][rng]") {
  for (const Kat& k : kKats) {
    uint32_t c[4] = {k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}, key[2] = {k.key[0], k.key[1]};
    philox_reference(c, key);
    for (int i = 0; i < 4; ++i) CHECK(c[i] == k.want[i]);
  }
}

TEST_CASE("core: mf::philox matches the published all-zero vector", "[core][rng]") {
  // seed 0 is key (0, 0); counter 0 fills words 0 and 1 with 0; words 2 and 3 are always 0
  mf::Philox4 r = mf::philox(0, 0);
  CHECK(r.v[0] == 0x6627e8d5u);
  CHECK(r.v[1] == 0xe169c58du);
  CHECK(r.v[2] == 0xbc57ac4cu);
  CHECK(r.v[3] == 0x9b00dbd8u);
  // The all-ff and pi vectors have nonzero counter words 2 and 3, which mf::philox(seed, counter)
  // cannot express; they are checked through the reference above, which the mapping below ties to.
}

TEST_CASE("core: mf::philox maps seed to the key and the counter to words 0 and 1", "[core][rng]") {
  const uint64_t seeds[] = {0, 1, 42, 0xffffffffull, 0x100000000ull, 0x299f31d0a4093822ull, ~uint64_t(0)};
  const uint64_t counters[] = {0, 1, 2, 0xffffffffull, 0x100000000ull, 0x85a308d3243f6a88ull, ~uint64_t(0)};
  for (uint64_t seed : seeds) {
    for (uint64_t counter : counters) {
      uint32_t c[4] = {uint32_t(counter), uint32_t(counter >> 32), 0, 0};
      uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
      philox_reference(c, key);
      mf::Philox4 r = mf::philox(seed, counter);
      INFO("seed " << seed << " counter " << counter);
      CHECK(r.v[0] == c[0]);
      CHECK(r.v[1] == c[1]);
      CHECK(r.v[2] == c[2]);
      CHECK(r.v[3] == c[3]);
    }
  }
  // distinct counters give distinct blocks, and the seed matters
  mf::Philox4 a = mf::philox(7, 0), b = mf::philox(7, 1), c = mf::philox(8, 0);
  CHECK(std::memcmp(a.v, b.v, sizeof a.v) != 0);
  CHECK(std::memcmp(a.v, c.v, sizeof a.v) != 0);
}

TEST_CASE("core: unit conversions stay within 0 inclusive to 1 exclusive", "[core][rng]") {
  CHECK(mf::u32_to_unit_float(0) == 0.0f);
  CHECK(mf::u32_to_unit_float(0xffffffffu) == 16777215.0f / 16777216.0f);
  CHECK(mf::u32_to_unit_float(0xffffffffu) < 1.0f);
  CHECK(mf::u32_to_unit_float(0x80000000u) == 0.5f);
  CHECK(mf::u64_to_unit_double(0, 0) == 0.0);
  CHECK(mf::u64_to_unit_double(0xffffffffu, 0xffffffffu) == 9007199254740991.0 / 9007199254740992.0);
  CHECK(mf::u64_to_unit_double(0xffffffffu, 0xffffffffu) < 1.0);
  CHECK(mf::u64_to_unit_double(0x80000000u, 0) == 0.5);
}

// -- the C ABI -----------------------------------------------------------------------------------

TEST_CASE("capi: an unallocatable tensor returns a status naming the size", "[core][capi]") {
  mf_memory_stats before{}, after{};
  REQUIRE(mf_memory_stats_get(MF_CPU, &before) == MF_OK);
  mf_tensor t{};
  int64_t shape[1] = {100000000000000LL};  // 1e14 float32: 400 TB
  int st = -1;
  REQUIRE_NOTHROW(st = mf_tensor_init(&t, 1, shape, MF_FLOAT32, MF_CPU));
  CHECK(st != MF_OK);
  std::string msg = mf_last_error();
  CHECK_THAT(msg, Contains("100000000000000"));
  CHECK_THAT(msg, Contains("float32"));
  CHECK(t.store == nullptr);  // untouched on failure
  CHECK(t.ptr == nullptr);
  REQUIRE(mf_memory_stats_get(MF_CPU, &after) == MF_OK);
  CHECK(after.in_use == before.in_use);
  CHECK(after.live_blocks == before.live_blocks);

  // and a 2-D spelling of an even larger request
  int64_t shape2[2] = {1000000000LL, 1000000000LL};  // 1e18 float64 exceeds any address space
  REQUIRE_NOTHROW(st = mf_tensor_init(&t, 2, shape2, MF_FLOAT64, MF_CPU));
  CHECK(st != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("1000000000x1000000000"));

  // the engine is still usable
  int64_t ok[2] = {2, 3};
  REQUIRE(mf_tensor_init(&t, 2, ok, MF_FLOAT32, MF_CPU) == MF_OK);
  CHECK(t.count == 6);
  mf_tensor_release(&t);
}

TEST_CASE("capi: bad shapes and dtypes are reported, not thrown", "[core][capi]") {
  mf_tensor t{};
  int64_t neg[2] = {2, -3};
  int st = MF_OK;
  REQUIRE_NOTHROW(st = mf_tensor_init(&t, 2, neg, MF_FLOAT32, MF_CPU));
  CHECK(st != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("-3") && Contains("negative"));

  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  REQUIRE_NOTHROW(st = mf_tensor_init(&t, 9, nine, MF_FLOAT32, MF_CPU));
  CHECK(st != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("9 dims") && Contains("8"));

  REQUIRE_NOTHROW(st = mf_tensor_init(&t, -1, nine, MF_FLOAT32, MF_CPU));
  CHECK(st != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("-1 dims"));

  int64_t ok[1] = {4};
  REQUIRE_NOTHROW(st = mf_tensor_init(&t, 1, ok, 17, MF_CPU));
  CHECK(st != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("dtype") && Contains("17"));

  // a 0-dim tensor and a tensor with a 0-sized dim are both fine
  REQUIRE(mf_tensor_init(&t, 0, nullptr, MF_FLOAT64, MF_CPU) == MF_OK);
  CHECK(t.count == 1);
  CHECK(mf_tensor_nbytes(&t) == 8);
  mf_tensor_release(&t);
  int64_t empty[2] = {0, 5};
  REQUIRE(mf_tensor_init(&t, 2, empty, MF_FLOAT32, MF_CPU) == MF_OK);
  CHECK(t.count == 0);
  CHECK(mf_tensor_nbytes(&t) == 0);
  mf_tensor_release(&t);

  // the error is per thread and the last one wins
  mf_tensor_init(&t, 2, neg, MF_FLOAT32, MF_CPU);
  mf_tensor_init(&t, 9, nine, MF_FLOAT32, MF_CPU);
  CHECK_THAT(std::string(mf_last_error()), Contains("9 dims"));
}

TEST_CASE("capi: share and release count storage references", "[core][capi]") {
  mf_memory_stats s0{}, s1{}, s2{};
  REQUIRE(mf_memory_stats_get(MF_CPU, &s0) == MF_OK);
  mf_tensor t{}, u{}, v{};
  int64_t shape[2] = {2, 3};
  REQUIRE(mf_tensor_init(&t, 2, shape, MF_FLOAT32, MF_CPU) == MF_OK);
  CHECK(t.owns == 1);
  CHECK(t.count == 6);
  CHECK(t.strides[0] == 3);
  CHECK(t.strides[1] == 1);
  CHECK(mf_tensor_nbytes(&t) == 24);
  CHECK(reinterpret_cast<uintptr_t>(t.ptr) % 256 == 0);
  CHECK(mf_storage_refcount(&t) == 1);
  REQUIRE(mf_memory_stats_get(MF_CPU, &s1) == MF_OK);
  CHECK(s1.in_use == s0.in_use + 256);  // 24 bytes round up to one 256-byte block
  CHECK(s1.live_blocks == s0.live_blocks + 1);

  REQUIRE(mf_tensor_share(&u, &t) == MF_OK);
  CHECK(u.store == t.store);
  CHECK(u.ptr == t.ptr);
  CHECK(u.owns == 1);
  CHECK(mf_storage_refcount(&t) == 2);
  CHECK(mf_storage_refcount(&u) == 2);
  REQUIRE(mf_tensor_share(&v, &u) == MF_OK);
  CHECK(mf_storage_refcount(&t) == 3);

  mf_tensor_release(&u);
  CHECK(u.store == nullptr);
  CHECK(u.ptr == nullptr);
  CHECK(u.owns == 0);
  CHECK(mf_storage_refcount(&u) == 0);
  CHECK(mf_storage_refcount(&t) == 2);
  mf_tensor_release(&u);  // releasing twice is harmless
  CHECK(mf_storage_refcount(&t) == 2);

  mf_tensor_release(&t);
  CHECK(mf_storage_refcount(&v) == 1);
  static_cast<float*>(v.ptr)[5] = 3.5f;  // the bytes are still alive through v
  CHECK(static_cast<float*>(v.ptr)[5] == 3.5f);
  REQUIRE(mf_memory_stats_get(MF_CPU, &s2) == MF_OK);
  CHECK(s2.in_use == s1.in_use);

  mf_tensor_release(&v);  // the last reference returns the block
  REQUIRE(mf_memory_stats_get(MF_CPU, &s2) == MF_OK);
  CHECK(s2.in_use == s0.in_use);
  CHECK(s2.live_blocks == s0.live_blocks);
  mf_tensor_release(nullptr);
}

TEST_CASE("capi: wrapped memory is referenced but never freed by the engine", "[core][capi]") {
  float data[6] = {1, 2, 3, 4, 5, 6};
  mf_tensor w{}, x{};
  int64_t shape[2] = {3, 2};
  REQUIRE(mf_tensor_wrap(&w, data, 2, shape, MF_FLOAT32) == MF_OK);
  CHECK(w.ptr == data);
  CHECK(w.count == 6);
  CHECK(mf_storage_refcount(&w) == 1);
  REQUIRE(mf_tensor_share(&x, &w) == MF_OK);
  CHECK(mf_storage_refcount(&w) == 2);
  mf_tensor_release(&w);
  mf_tensor_release(&x);
  CHECK(data[5] == 6.0f);  // caller memory intact

  int64_t neg[1] = {-1};
  CHECK(mf_tensor_wrap(&w, data, 1, neg, MF_FLOAT32) != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("negative"));
}

TEST_CASE("capi: restride stays inside the storage", "[core][capi]") {
  mf_tensor t{};
  int64_t shape[2] = {2, 3};
  REQUIRE(mf_tensor_init(&t, 2, shape, MF_FLOAT32, MF_CPU) == MF_OK);
  void* base = t.ptr;
  int64_t tshape[2] = {3, 2}, tstride[2] = {1, 3};  // the transpose
  REQUIRE(mf_tensor_restride(&t, 2, tshape, tstride, 0) == MF_OK);
  CHECK(t.is_contig == 0);
  CHECK(t.ptr == base);
  int64_t row[1] = {3}, rstride[1] = {1};  // the second row: offset 3 elements
  REQUIRE(mf_tensor_restride(&t, 1, row, rstride, 3) == MF_OK);
  CHECK(t.ptr == static_cast<char*>(base) + 12);
  CHECK(t.is_contig == 1);
  int64_t big[2] = {3, 3}, bstride[2] = {3, 1};  // 9 elements of a 6-element storage
  CHECK(mf_tensor_restride(&t, 2, big, bstride, 0) != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("3x3") && Contains("outside"));
  CHECK(mf_tensor_restride(&t, 1, row, rstride, 4) != MF_OK);  // elements 4..6 of 0..5
  int64_t back[1] = {3}, bneg[1] = {-1};
  REQUIRE(mf_tensor_restride(&t, 1, back, bneg, 2) == MF_OK);  // a reversed first row: 2, 1, 0
  CHECK(mf_tensor_restride(&t, 1, back, bneg, 1) != MF_OK);    // would reach element -1
  mf_tensor_release(&t);
}

namespace {

int matmul_index() {
  mf::register_builtin_ops();
  int op = mf_op_find("matmul");
  REQUIRE(op >= 0);
  return op;
}

mf_tensor meta(std::initializer_list<int64_t> shape, int dtype = MF_FLOAT32) {
  mf_tensor t{};
  mf::set_meta(t, Shape(shape), dtype, MF_CPU);
  return t;
}

}  // namespace

TEST_CASE("capi: mf_params_parse reports errors through mf_last_error", "[core][capi]") {
  int op = matmul_index();
  mf_params* p = nullptr;
  REQUIRE_NOTHROW(p = mf_params_parse(op, "transpose_c=true"));
  CHECK(p == nullptr);
  std::string m = mf_last_error();
  CHECK_THAT(m, Contains("matmul") && Contains("'transpose_c'") && Contains("transpose_a, transpose_b"));

  CHECK(mf_params_parse(op, "transpose_a=maybe") == nullptr);
  CHECK_THAT(std::string(mf_last_error()), Contains("'transpose_a'") && Contains("boolean") && Contains("'maybe'"));
  CHECK(mf_params_parse(op, "transpose_a=1;transpose_a=0") == nullptr);
  CHECK_THAT(std::string(mf_last_error()), Contains("twice"));
  CHECK(mf_params_parse(-1, "") == nullptr);
  CHECK_THAT(std::string(mf_last_error()), Contains("-1"));
  CHECK(mf_params_parse(1 << 30, "") == nullptr);

  p = mf_params_parse(op, "transpose_b=1");
  REQUIRE(p != nullptr);
  CHECK(std::string(mf_params_canonical(p)) == "transpose_a=false;transpose_b=true");
  CHECK(mf_params_count(p) == 2);
  CHECK(std::string(mf_params_key(p, 1)) == "transpose_b");
  CHECK(mf_params_number(p, 0) == 0.0);
  CHECK(mf_params_number(p, 1) == 1.0);
  mf_params_free(p);
  p = mf_params_parse(op, nullptr);  // NULL text means no params given
  REQUIRE(p != nullptr);
  CHECK(std::string(mf_params_canonical(p)) == "transpose_a=false;transpose_b=false");
  mf_params_free(p);
}

TEST_CASE("capi: mf_op_infer for matmul", "[core][capi]") {
  int op = matmul_index();
  mf_tensor out[2];
  int alias[2] = {-1, -1}, n_out = -1;

  mf_tensor a = meta({2, 3}), b = meta({4, 5});
  const mf_tensor* ins[2] = {&a, &b};
  int st = MF_OK;
  REQUIRE_NOTHROW(st = mf_op_infer(op, nullptr, 2, ins, 2, out, alias, &n_out));
  CHECK(st != MF_OK);
  std::string m = mf_last_error();
  CHECK_THAT(m, Contains("matmul"));
  CHECK_THAT(m, Contains("2x3"));
  CHECK_THAT(m, Contains("4x5"));

  mf_tensor c = meta({3, 5});
  const mf_tensor* ok[2] = {&a, &c};
  REQUIRE(mf_op_infer(op, nullptr, 2, ok, 2, out, alias, &n_out) == MF_OK);
  CHECK(n_out == 1);
  CHECK(out[0].ndim == 2);
  CHECK(out[0].shape[0] == 2);
  CHECK(out[0].shape[1] == 5);
  CHECK(out[0].strides[0] == 5);
  CHECK(out[0].count == 10);
  CHECK(out[0].dtype_id == MF_FLOAT32);
  CHECK(out[0].ptr == nullptr);
  CHECK(out[0].store == nullptr);
  CHECK(alias[0] == 0);

  // batch dims broadcast: 7x1 with 4 gives 7x4
  mf_tensor ba = meta({7, 1, 2, 3}), bb = meta({4, 3, 5});
  const mf_tensor* bins[2] = {&ba, &bb};
  REQUIRE(mf_op_infer(op, nullptr, 2, bins, 2, out, alias, &n_out) == MF_OK);
  CHECK(mf::shape_str(out[0]) == "7x4x2x5");

  // transpose_a: a is 3x2 read as 2x3
  mf_params* p = mf_params_parse(op, "transpose_a=true");
  REQUIRE(p != nullptr);
  mf_tensor ta = meta({3, 2});
  const mf_tensor* tins[2] = {&ta, &c};
  REQUIRE(mf_op_infer(op, p, 2, tins, 2, out, alias, &n_out) == MF_OK);
  CHECK(mf::shape_str(out[0]) == "2x5");
  CHECK(mf_op_infer(op, p, 2, ok, 2, out, alias, &n_out) != MF_OK);  // a 2x3 transposed is 3x2
  CHECK_THAT(std::string(mf_last_error()), Contains("matmul") && Contains("2x3") && Contains("3x5"));
  mf_params_free(p);

  // wrong input count, 1-D input and mixed dtypes are errors too
  CHECK(mf_op_infer(op, nullptr, 1, ok, 2, out, alias, &n_out) != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("matmul") && Contains("2 inputs"));
  mf_tensor v = meta({3});
  const mf_tensor* vins[2] = {&a, &v};
  CHECK(mf_op_infer(op, nullptr, 2, vins, 2, out, alias, &n_out) != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("matmul") && Contains("2x3") && Contains("3"));
  mf_tensor d = meta({3, 5}, MF_FLOAT64);
  const mf_tensor* dins[2] = {&a, &d};
  CHECK(mf_op_infer(op, nullptr, 2, dins, 2, out, alias, &n_out) != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("float32") && Contains("float64"));
  mf_tensor ia = meta({2, 3}, MF_INT32), ic = meta({3, 5}, MF_INT32);
  const mf_tensor* iins[2] = {&ia, &ic};
  CHECK(mf_op_infer(op, nullptr, 2, iins, 2, out, alias, &n_out) != MF_OK);
  CHECK_THAT(std::string(mf_last_error()), Contains("int32"));
  CHECK(mf_op_infer(-5, nullptr, 2, ok, 2, out, alias, &n_out) != MF_OK);
}

TEST_CASE("capi: mf_op_infer reports an output count beyond max_out, writing nothing", "[core][capi]") {
  mf::register_builtin_ops();
  int op = mf_op_find("unbind");
  REQUIRE(op >= 0);
  mf_tensor x = meta({5, 2});  // unbind along dim 1: five 2-element views
  const mf_tensor* ins[1] = {&x};
  mf_tensor out[5];
  out[0].ndim = 7;  // a marker the short call must leave alone
  int alias[5] = {-1, -1, -1, -1, -1}, n_out = -1;
  REQUIRE(mf_op_infer(op, nullptr, 1, ins, 2, out, alias, &n_out) == MF_OK);
  CHECK(n_out == 5);
  CHECK(out[0].ndim == 7);
  CHECK(alias[0] == -1);
  REQUIRE(mf_op_infer(op, nullptr, 1, ins, 5, out, alias, &n_out) == MF_OK);
  CHECK(n_out == 5);
  CHECK(mf::shape_str(out[4]) == "2");
  CHECK(alias[4] == 1);
}
