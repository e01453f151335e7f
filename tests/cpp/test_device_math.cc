// The host-and-device code of the shared core headers, run here on the CPU: the same functions nvcc
// compiles into the CUDA kernels (src/kernels/cuda/optim.cu, pool.cu, sort.cu, scan.cu), so a GPU-less
// machine checks the arithmetic the GPU runs. update_math.h (the optimizer element updates and adam's
// per-step scalars), nchw.h (the pooling window spans) and lines.h (line offsets, the sort order),
// each against hand-computed values of PyTorch's formulas, never against the code's own output.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/lines.h"
#include "core/nchw.h"
#include "core/update_math.h"

namespace {

using Catch::Detail::Approx;

}  // namespace

TEST_CASE("device math: adam's per-step scalars are PyTorch's and TensorFlow's bias corrections",
          "[device_math]") {
  // t = 1, lr 0.1, betas 0.9 / 0.999: bc1 = 0.1, bc2 = 0.001
  mf::upd::AdamStep k = mf::upd::adam_scalars(1, 0.1, 0.9, 0.999, 0, 0);
  CHECK(k.step == Approx(1.0).epsilon(1e-14));                       // lr / bc1
  CHECK(k.ds == Approx(31.622776601683793).epsilon(1e-14));          // 1 / sqrt(0.001)
  CHECK(k.keep == 1.0);
  // t = 3: bc1 = 1 - 0.729 = 0.271, bc2 = 1 - 0.997002999 = 0.002997001
  k = mf::upd::adam_scalars(3, 0.1, 0.9, 0.999, 0, 0);
  CHECK(k.step == Approx(0.1 / 0.271).epsilon(1e-13));
  CHECK(k.ds == Approx(18.2665510975673).epsilon(1e-13));            // 1 / sqrt(0.002997001)
  // TensorFlow's epsilon: lr * sqrt(bc2) / bc1 at t = 1 is 0.1 * 0.0316227766 / 0.1; ds = 1
  k = mf::upd::adam_scalars(1, 0.1, 0.9, 0.999, 0, mf::upd::kAdamTfEpsilon);
  CHECK(k.step == Approx(0.031622776601683793).epsilon(1e-14));
  CHECK(k.ds == 1.0);
  // AdamW: the weight is scaled by 1 - lr * wd = 1 - 0.1 * 0.01
  k = mf::upd::adam_scalars(1, 0.1, 0.9, 0.999, 0.01, mf::upd::kAdamDecoupled);
  CHECK(k.keep == Approx(0.999).epsilon(1e-15));
  CHECK(k.step == Approx(1.0).epsilon(1e-14));
  // the decay the form and weight decay select
  CHECK(mf::upd::adam_decay(0, 0) == mf::upd::kNoDecay);
  CHECK(mf::upd::adam_decay(mf::upd::kAdamDecoupled, 0) == mf::upd::kNoDecay);
  CHECK(mf::upd::adam_decay(0, 0.01) == mf::upd::kL2);
  CHECK(mf::upd::adam_decay(mf::upd::kAdamDecoupled, 0.01) == mf::upd::kDecoupled);
}

TEST_CASE("device math: adam's first step moves each weight by about lr against the gradient's sign",
          "[device_math]") {
  // PyTorch's first step: m = 0.1 g, v = 0.001 g^2, update lr * m / bc1 / (sqrt(v / bc2) + eps) = lr * sign(g)
  // up to eps. g = 0.5, lr = 0.1, eps = 1e-8: w = 1 - 0.1 * 0.5 / (0.5 + 1e-8)
  for (int decay : {int(mf::upd::kNoDecay), int(mf::upd::kL2), int(mf::upd::kDecoupled)}) {
    double w = 1, m = 0, v = 0;
    const double lr = 0.1, wd = decay == mf::upd::kNoDecay ? 0 : 0.01;
    mf::upd::AdamStep k =
        mf::upd::adam_scalars(1, lr, 0.9, 0.999, wd, decay == mf::upd::kDecoupled ? mf::upd::kAdamDecoupled : 0);
    const double g = 0.5;
    if (decay == mf::upd::kNoDecay)
      mf::upd::adam_step<double, mf::upd::kNoDecay>(w, m, v, g, 0.9, 0.999, 0.1, 1 - 0.999, k.step, k.ds, 1e-8, wd, k.keep);
    else if (decay == mf::upd::kL2)
      mf::upd::adam_step<double, mf::upd::kL2>(w, m, v, g, 0.9, 0.999, 0.1, 1 - 0.999, k.step, k.ds, 1e-8, wd, k.keep);
    else
      mf::upd::adam_step<double, mf::upd::kDecoupled>(w, m, v, g, 0.9, 0.999, 0.1, 1 - 0.999, k.step, k.ds, 1e-8, wd,
                                                      k.keep);
    // L2: g' = 0.5 + 0.01 * 1 = 0.51 (m 0.051, v 0.00026010); AdamW: w' = 0.999 first
    const double ge = decay == mf::upd::kL2 ? 0.51 : 0.5;
    const double w0 = decay == mf::upd::kDecoupled ? 0.999 : 1.0;
    CAPTURE(decay);
    CHECK(m == Approx(0.1 * ge).epsilon(1e-15));
    CHECK(v == Approx(0.001 * ge * ge).epsilon(1e-13));
    CHECK(w == Approx(w0 - 0.1 * ge / (ge + 1e-8)).epsilon(1e-13));
  }
}

TEST_CASE("device math: sgd and momentum element updates are PyTorch's", "[device_math]") {
  double w = 2;
  mf::upd::sgd_step<double, true>(w, 0.5, 0.1, 0.01);  // g = 0.5 + 0.01 * 2 = 0.52; w = 2 - 0.052
  CHECK(w == Approx(1.948).epsilon(1e-15));
  double inf = std::numeric_limits<double>::infinity();
  w = inf;
  mf::upd::sgd_step<double, false>(w, 1.0, 0.1, 0);  // no 0 * inf: stays inf
  CHECK(w == inf);
  // buf = 0.9 * 0.5 + 1 * 0.2 = 0.65; w = 1 - 0.1 * 0.65; nesterov: 1 - 0.1 * (0.2 + 0.9 * 0.65)
  double m = 0.5;
  w = 1;
  mf::upd::momentum_step<double, false, false>(w, m, 0.2, 0.1, 0.9, 1.0, 0);
  CHECK(m == Approx(0.65).epsilon(1e-15));
  CHECK(w == Approx(0.935).epsilon(1e-15));
  m = 0.5;
  w = 1;
  mf::upd::momentum_step<double, false, true>(w, m, 0.2, 0.1, 0.9, 1.0, 0);
  CHECK(w == Approx(0.9215).epsilon(1e-15));
  // dampening 0.5 (c = 0.5) and decay 0.1: g = 0.2 + 0.1 * 1 = 0.3; buf = 0.45 + 0.15 = 0.6; w = 1 - 0.06
  m = 0.5;
  w = 1;
  mf::upd::momentum_step<double, true, false>(w, m, 0.2, 0.1, 0.9, 0.5, 0.1);
  CHECK(m == Approx(0.6).epsilon(1e-15));
  CHECK(w == Approx(0.94).epsilon(1e-15));
  // lr and t as the kernels read them: from a float32 or float64 element
  float f = 0.25f;
  double d = 3.0;
  CHECK(mf::upd::scalar_at(&f, false) == 0.25);
  CHECK(mf::upd::scalar_at(&d, true) == 3.0);
}

TEST_CASE("device math: pooling window spans follow PyTorch's geometry", "[device_math]") {
  // 5 inputs, kernel 3, stride 2, padding 1: 3 outputs; windows [-1,2), [1,4), [3,6) clipped to [0,5)
  mf::Span s0 = mf::span(0, 3, 2, 1, 5, false), s1 = mf::span(1, 3, 2, 1, 5, false), s2 = mf::span(2, 3, 2, 1, 5, false);
  CHECK((s0.lo == 0 && s0.hi == 2 && s0.div == 2));
  CHECK((s1.lo == 1 && s1.hi == 4 && s1.div == 3));
  CHECK((s2.lo == 3 && s2.hi == 5 && s2.div == 2));
  // count_include_pad: the divisor counts padding cells inside the padded input (n + p = 6), not past it
  CHECK(mf::span(0, 3, 2, 1, 5, true).div == 3);
  CHECK(mf::span(2, 3, 2, 1, 5, true).div == 3);
  // 4 inputs, kernel 3, stride 2, padding 1: window 1 is [1,4), all real; window 0 [-1,2) has one pad cell
  CHECK(mf::span(1, 3, 2, 1, 4, true).div == 3);
  CHECK(mf::span(0, 3, 2, 1, 4, false).div == 2);
  // adaptive, 5 inputs to 3 outputs: [0,2), [1,4), [3,5) (floor(i*5/3), ceil((i+1)*5/3))
  mf::Span a0 = mf::adaptive_span(0, 5, 3), a1 = mf::adaptive_span(1, 5, 3), a2 = mf::adaptive_span(2, 5, 3);
  CHECK((a0.lo == 0 && a0.hi == 2 && a0.div == 2));
  CHECK((a1.lo == 1 && a1.hi == 4 && a1.div == 3));
  CHECK((a2.lo == 3 && a2.hi == 5 && a2.div == 2));
  // more outputs than inputs (2 to 3): windows [0,1), [0,2), [1,2)
  CHECK((mf::adaptive_span(1, 2, 3).lo == 0 && mf::adaptive_span(1, 2, 3).hi == 2));
}

TEST_CASE("device math: the lines of a tensor along a dim, and where an output holds them", "[device_math]") {
  mf_tensor t{};
  mf::set_meta(t, {2, 3, 4}, MF_FLOAT32, MF_CPU);  // strides 12, 4, 1
  mf::Lines l(t, 1);
  CHECK(l.n == 3);
  CHECK(l.stride == 4);
  CHECK(l.count == 8);
  CHECK(l.inner == 4);
  // line 5 is (i0, i2) = (1, 1): its first element at 12 + 1; in a contiguous [2, len, 4] output at 1*len*4 + 1
  CHECK(l.offset(5) == 13);
  CHECK(l.out_start(5, 3) == 13);
  CHECK(l.out_start(5, 2) == 9);
  // a transposed view: [4, 3] with strides 1, 4, lines along dim 1 (stride 4), line 2 starts at 2
  mf_tensor v{};
  mf::set_strided(v, {4, 3}, {1, 4}, 0);
  mf::Lines lv(v, 1);
  CHECK((lv.n == 3 && lv.stride == 4 && lv.count == 4 && lv.inner == 1));
  CHECK(lv.offset(2) == 2);
  CHECK(lv.out_start(2, 3) == 6);
  // a 0-dim tensor: one line of one element
  mf_tensor s{};
  mf::set_meta(s, mf::Shape{}, MF_FLOAT32, MF_CPU);
  mf::Lines ls(s, -1);
  CHECK((ls.n == 1 && ls.count == 1 && ls.offset(0) == 0 && ls.out_start(0, 1) == 0));
}

TEST_CASE("device math: the sort order puts NaN last ascending, first descending, ties by position",
          "[device_math]") {
  const double nan = std::nan("");
  CHECK(mf::value_before<double, false>(1.0, 2.0, 5, 0));
  CHECK_FALSE(mf::value_before<double, false>(2.0, 1.0, 0, 5));
  CHECK(mf::value_before<double, true>(2.0, 1.0, 5, 0));
  CHECK(mf::value_before<double, false>(1.0, nan, 5, 0));   // NaN above every number
  CHECK_FALSE(mf::value_before<double, false>(nan, 1.0, 0, 5));
  CHECK(mf::value_before<double, true>(nan, 1.0, 5, 0));    // descending: NaN first
  CHECK(mf::value_before<double, false>(nan, nan, 1, 2));   // NaNs by position (stable)
  CHECK_FALSE(mf::value_before<double, true>(nan, nan, 2, 1));
  CHECK(mf::value_before<double, false>(-0.0, 0.0, 1, 2));  // equal values: by position, either order
  CHECK_FALSE(mf::value_before<double, false>(-0.0, 0.0, 2, 1));
  CHECK(mf::value_before<double, true>(3.0, 3.0, 1, 2));
  CHECK(mf::value_before<int64_t, true>(int64_t(1) << 60, (int64_t(1) << 60) - 1, 9, 0));
}
