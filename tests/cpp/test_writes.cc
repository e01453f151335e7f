// The write rule's native checks (src/core/writes.h) against hand-worked cases: broadcasting,
// overlap detection (dense, views, expand, as_strided), integer ranges, and copy/fill through them.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "core/writes.h"
#include "kernels/cpu/kernels.h"

using Catch::Contains;
using mf::Shape;

namespace {

// metadata only (no data): sizes and strides as given
mf_tensor meta(const Shape& s, const Shape& st, int dtype = MF_FLOAT32) {
  mf_tensor t{};
  mf::set_strided(t, s, st, 0);
  t.dtype_id = dtype;
  static float dummy[1];
  t.ptr = dummy;
  return t;
}

std::string message_of(void (*f)()) {
  try {
    f();
  } catch (const mf::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("writes: broadcast rule and its message", "[core][writes]") {
  auto ok = [](const Shape& s, const Shape& d) {
    try {
      mf::check_broadcast(meta(s, mf::contiguous_strides(s)), meta(d, mf::contiguous_strides(d)), "copy");
      return true;
    } catch (const mf::Error&) {
      return false;
    }
  };
  CHECK(ok({2, 3}, {2, 3}));
  CHECK(ok({3}, {2, 3}));
  CHECK(ok({1, 3}, {2, 3}));
  CHECK(ok({2, 1}, {2, 3}));
  CHECK(ok({}, {2, 3}));
  CHECK_FALSE(ok({1}, {}));  // more dims than the destination, as torch's copy_ refuses
  CHECK_FALSE(ok({2}, {3}));
  CHECK_FALSE(ok({3, 2}, {2, 3}));
  CHECK_FALSE(ok({1, 2}, {2}));
  CHECK_FALSE(ok({2, 3}, {2, 1}));  // the destination never broadcasts
  CHECK_THAT(message_of([] {
               mf::check_broadcast(meta({100, 100}, {100, 1}), meta({2}, {1}), "copy");
             }),
             Contains("copy: source 100x100 does not broadcast to destination 2"));
  CHECK_THAT(message_of([] { mf::check_broadcast(meta({2}, {1}), meta({3}, {1}), "copy"); }),
             Contains("at dim 1 of the destination the source has size 2"));
}

TEST_CASE("writes: internal overlap of views", "[core][writes]") {
  CHECK(mf::internal_overlap(meta({3, 4}, {4, 1})) == -1);      // dense
  CHECK(mf::internal_overlap(meta({4, 3}, {1, 4})) == -1);      // transposed
  CHECK(mf::internal_overlap(meta({3, 2}, {4, 1})) == -1);      // narrowed
  CHECK(mf::internal_overlap(meta({2, 2}, {8, 2})) == -1);      // sliced with step
  CHECK(mf::internal_overlap(meta({2, 3, 4}, {1, 8, 2})) == -1);  // permuted
  CHECK(mf::internal_overlap(meta({3, 4}, {1, 0})) == 1);       // expand along dim 2
  CHECK(mf::internal_overlap(meta({1, 4}, {0, 1})) == -1);      // size-1 dims never overlap
  CHECK(mf::internal_overlap(meta({3, 2}, {2, 3})) == -1);      // offsets 0,3,2,5,4,7: distinct
  CHECK(mf::internal_overlap(meta({3, 2}, {1, 2})) == -2);      // offsets 0,2,1,3,2,4: 2 twice
  CHECK(mf::internal_overlap(meta({2, 2}, {-1, 1})) == -2);     // negative strides: 0,1,-1,0
  CHECK(mf::internal_overlap(meta({3, 2}, {-2, 3})) == -1);     // 0,3,-2,1,-4,-1
  CHECK_THAT(message_of([] { mf::check_writable(meta({3, 4}, {1, 0}), "fill", "tensor"); }),
             Contains("fill: tensor is an expanded view (stride 0 along dim 2 of size 4)"));
  CHECK_THAT(message_of([] { mf::check_writable(meta({3, 2}, {1, 2}), "copy", "destination"); }),
             Contains("copy: destination of size 3x2 with strides (1,2) has overlapping elements"));
}

TEST_CASE("writes: integer ranges", "[core][writes]") {
  auto fits = [](double v, int dt) {
    try {
      mf::check_value_fits(v, dt, "fill");
      return true;
    } catch (const mf::Error&) {
      return false;
    }
  };
  CHECK(fits(255, MF_UINT8));
  CHECK(fits(255.9, MF_UINT8));  // truncates toward zero
  CHECK(fits(-0.9, MF_UINT8));
  CHECK_FALSE(fits(256, MF_UINT8));
  CHECK_FALSE(fits(-1, MF_UINT8));
  CHECK(fits(2147483647, MF_INT32));
  CHECK_FALSE(fits(2147483648.0, MF_INT32));
  CHECK(fits(-9223372036854775808.0, MF_INT64));
  CHECK_FALSE(fits(9223372036854775808.0, MF_INT64));
  CHECK_FALSE(fits(NAN, MF_INT64));
  CHECK_FALSE(fits(INFINITY, MF_INT32));
  CHECK(fits(NAN, MF_FLOAT32));
  CHECK(fits(1e300, MF_FLOAT64));
  CHECK_THAT(message_of([] { mf::check_value_fits(300, MF_UINT8, "full"); }),
             Contains("full: value 300 does not fit uint8 (0..255)"));
}

TEST_CASE("writes: copy_cpu and fill_cpu apply the rule", "[core][writes]") {
  mf_tensor a{}, b{};
  mf::tensor_init(a, Shape{3, 4}, MF_FLOAT32, MF_CPU);
  mf::tensor_init(b, Shape{2}, MF_FLOAT32, MF_CPU);
  mf::fill_cpu(a, 0);
  mf::fill_cpu(b, 5);
  CHECK_THROWS_WITH(mf::copy_cpu(b, a), Contains("copy: source 3x4 does not broadcast to destination 2"));
  // the 3x4 tensor's column 3 as a strided view: fill writes exactly those elements
  mf_tensor col = a;
  col.owns = 0;
  mf::set_strided(col, Shape{3}, Shape{4}, 2);
  col.ptr = static_cast<float*>(a.ptr) + 2;
  mf::fill_cpu(col, 7);
  const float* p = static_cast<const float*>(a.ptr);
  for (int i = 0; i < 12; ++i) CHECK(p[i] == (i % 4 == 2 ? 7.f : 0.f));
  // an expanded view of b is refused by fill and copy, and b stays as it was
  mf_tensor e = b;
  e.owns = 0;
  mf::set_strided(e, Shape{3, 2}, Shape{0, 1}, 0);
  CHECK_THROWS_WITH(mf::fill_cpu(e, 1), Contains("fill: tensor is an expanded view"));
  CHECK_THROWS_WITH(mf::copy_cpu(e, a), Contains("does not broadcast"));
  mf_tensor row = a;
  row.owns = 0;
  mf::set_strided(row, Shape{3, 2}, Shape{4, 1}, 0);
  CHECK_THROWS_WITH(mf::copy_cpu(e, row), Contains("copy: destination is an expanded view"));
  CHECK(static_cast<const float*>(b.ptr)[0] == 5.f);
  // metadata that lies about its count is refused before any byte is touched
  mf_tensor liar = b;
  liar.owns = 0;
  liar.count = 1000;
  CHECK_THROWS_WITH(mf::fill_cpu(liar, 1), Contains("claims 1000 elements"));
  mf::tensor_release(a);
  mf::tensor_release(b);
}
