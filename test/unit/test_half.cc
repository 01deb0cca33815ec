// float16 / bfloat16 conversion and reduction accuracy.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/fp16_f16c.h"
#include "kernels/reduce_kernels.h"
#include "common/half.h"

using namespace chorus;
using namespace chorus::detail;

TEST_CASE("Every float16 value survives float32 and back", "[half]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float(static_cast<uint16_t>(h));
    const uint16_t back = float_to_fp16(f);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(fp16_to_float(back)));
    } else {
      INFO("half bits " << h);
      REQUIRE(back == h);
    }
  }
}

TEST_CASE("Every bfloat16 value survives float32 and back", "[half]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<uint16_t>(h));
    const uint16_t back = float_to_bf16(f);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(bf16_to_float(back)));
    } else {
      REQUIRE(back == h);
    }
  }
}

TEST_CASE("float16 rounds to nearest even, overflows to infinity, keeps subnormals", "[half]") {
  REQUIRE(fp16_to_float(0x3c00) == 1.0f);
  REQUIRE(float_to_fp16(1.0f + 1.0f / 2048) == 0x3c00);            // tie -> even (down)
  REQUIRE(float_to_fp16(1.0f + 3.0f / 2048) == 0x3c02);            // tie -> even (up)
  REQUIRE(float_to_fp16(65504.0f) == 0x7bff);                      // largest finite
  REQUIRE(float_to_fp16(65520.0f) == 0x7c00);                      // rounds to +inf
  REQUIRE(float_to_fp16(-1e9f) == 0xfc00);
  REQUIRE(float_to_fp16(5.9604644775390625e-8f) == 0x0001);        // smallest subnormal
  REQUIRE(float_to_fp16(2.98023223876953125e-8f) == 0x0000);       // half of it: tie -> 0
  REQUIRE(std::isnan(fp16_to_float(float_to_fp16(std::nanf("")))));
  REQUIRE(float_to_bf16(1.0f + 1.0f / 256) == 0x3f80);             // bf16 tie -> even
  REQUIRE(bf16_to_float(float_to_bf16(3.0f)) == 3.0f);
}

TEST_CASE("Half reductions accumulate in float32 and stay within one rounding of float64", "[half]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  const int n = 4096;
  for (auto [dtype, to_f, from_f, ulp] :
       {std::make_tuple(DataType::kFloat16, &fp16_to_float, &float_to_fp16, 1.0 / 1024),
        std::make_tuple(DataType::kBFloat16, &bf16_to_float, &float_to_bf16, 1.0 / 128)}) {
    std::vector<uint16_t> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = from_f(dist(rng));
      b[i] = from_f(dist(rng));
    }
    std::vector<uint16_t> sum = a;
    reduce_into(sum.data(), b.data(), n, dtype, ReduceOp::kSum);
    std::vector<uint16_t> prod = a;
    reduce_into(prod.data(), b.data(), n, dtype, ReduceOp::kProduct);
    for (int i = 0; i < n; ++i) {
      const double exact_sum = double(to_f(a[i])) + double(to_f(b[i]));
      const double exact_prod = double(to_f(a[i])) * double(to_f(b[i]));
      // One rounding of the exact result: at most half an ulp of its magnitude.
      REQUIRE(std::abs(to_f(sum[i]) - exact_sum) <= std::abs(exact_sum) * ulp / 2 + 1e-7);
      REQUIRE(std::abs(to_f(prod[i]) - exact_prod) <= std::abs(exact_prod) * ulp / 2 + 1e-7);
    }
  }
}

TEST_CASE("float16 kernels match the portable float32-accumulating loop bit for bit", "[half]") {
  // On a CPU with F16C this checks the vector path; elsewhere both sides are
  // the portable path. Inputs: random bit patterns (subnormals, infinities,
  // signed zeros) without NaN, an odd length so the scalar tail runs too.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  auto not_nan = [&] {
    for (;;) {
      const auto h = static_cast<uint16_t>(bits(rng));
      if (!std::isnan(fp16_to_float(h))) return h;
    }
  };
  const int n = 10007;
  std::vector<uint16_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = not_nan();
    b[i] = not_nan();
  }
  INFO("F16C in use: " << chorus::detail::f16c_available());
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    std::vector<uint16_t> out(n);
    reduce_to(out.data(), a.data(), b.data(), n, DataType::kFloat16, op);
    int64_t differ = 0;
    for (int i = 0; i < n; ++i) {
      const float x = fp16_to_float(a[i]), y = fp16_to_float(b[i]);
      float r = 0;
      if (op == ReduceOp::kSum) r = x + y;
      if (op == ReduceOp::kProduct) r = x * y;
      if (op == ReduceOp::kMin) r = y < x ? y : x;
      if (op == ReduceOp::kMax) r = x < y ? y : x;
      const uint16_t want = float_to_fp16(r);
      // NaN results (inf - inf, 0 * inf) may differ in payload; both must be NaN.
      const bool same = out[i] == want || (std::isnan(fp16_to_float(want)) && std::isnan(fp16_to_float(out[i])));
      differ += !same;
    }
    INFO(reduce_op_name(op));
    REQUIRE(differ == 0);
  }
  std::vector<uint16_t> scaled(n);
  scale_copy(scaled.data(), a.data(), n, DataType::kFloat16, 0.37, 1);
  for (int i = 0; i < n; ++i) {
    const uint16_t want = float_to_fp16(fp16_to_float(a[i]) * 0.37f);
    REQUIRE((scaled[i] == want || std::isnan(fp16_to_float(want))));
  }
}
