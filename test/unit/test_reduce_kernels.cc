// Element-wise reductions and scaling for every dtype.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/reduce_kernels.h"
#include "kernels/streaming_copy.h"
#include "common/half.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
template <class T>
std::vector<T> reduced(std::vector<T> a, const std::vector<T>& b, DataType dt, ReduceOp op) {
  reduce_into(a.data(), b.data(), static_cast<int64_t>(a.size()), dt, op);
  return a;
}
}  // namespace

TEMPLATE_TEST_CASE("Integer and float reductions", "[kernels]", int8_t, uint8_t, int16_t, int32_t, int64_t, float,
                   double) {
  DataType dt = std::is_same_v<TestType, int8_t>    ? DataType::kInt8
                : std::is_same_v<TestType, uint8_t> ? DataType::kUInt8
                : std::is_same_v<TestType, int16_t> ? DataType::kInt16
                : std::is_same_v<TestType, int32_t> ? DataType::kInt32
                : std::is_same_v<TestType, int64_t> ? DataType::kInt64
                : std::is_same_v<TestType, float>   ? DataType::kFloat32
                                                    : DataType::kFloat64;
  std::vector<TestType> a = {1, 5, 3, 0, 7}, b = {2, 4, 3, 9, 1};
  REQUIRE(reduced(a, b, dt, ReduceOp::kSum) == std::vector<TestType>{3, 9, 6, 9, 8});
  REQUIRE(reduced(a, b, dt, ReduceOp::kAverage) == std::vector<TestType>{3, 9, 6, 9, 8});  // sum; scale divides
  REQUIRE(reduced(a, b, dt, ReduceOp::kMin) == std::vector<TestType>{1, 4, 3, 0, 1});
  REQUIRE(reduced(a, b, dt, ReduceOp::kMax) == std::vector<TestType>{2, 5, 3, 9, 7});
  REQUIRE(reduced(a, b, dt, ReduceOp::kProduct) == std::vector<TestType>{2, 20, 9, 0, 7});
}

TEST_CASE("Bool min is AND, max is OR, and results are 0 or 1", "[kernels]") {
  std::vector<uint8_t> a = {0, 1, 0, 2}, b = {0, 0, 1, 3};
  REQUIRE(reduced(a, b, DataType::kBool, ReduceOp::kMin) == std::vector<uint8_t>{0, 0, 0, 1});
  REQUIRE(reduced(a, b, DataType::kBool, ReduceOp::kMax) == std::vector<uint8_t>{0, 1, 1, 1});
  REQUIRE_FALSE(reduction_supported(DataType::kBool, ReduceOp::kSum));
  REQUIRE(reduction_supported(DataType::kBool, ReduceOp::kMax));
}

TEST_CASE("Scaling: floats multiply, integers truncate the exact quotient", "[kernels]") {
  std::vector<float> f = {3, 6, 9};
  scale_copy(f.data(), f.data(), 3, DataType::kFloat32, 1.0, 3);
  REQUIRE(f == std::vector<float>{1, 2, 3});
  std::vector<int32_t> i = {9, 10, -10}, out(3);
  scale_copy(out.data(), i.data(), 3, DataType::kInt32, 1.0, 3);
  REQUIRE(out == std::vector<int32_t>{3, 3, -3});
  scale_copy(out.data(), i.data(), 3, DataType::kInt32, 0.5, 1);
  REQUIRE(out == std::vector<int32_t>{4, 5, -5});
  std::vector<uint16_t> h = {float_to_bf16(3.0f)};
  scale_copy(h.data(), h.data(), 1, DataType::kBFloat16, 2.0, 3);
  REQUIRE(bf16_to_float(h[0]) == 2.0f);
  std::vector<double> src = {1.5}, dst = {0};
  scale_copy(dst.data(), src.data(), 1, DataType::kFloat64, 1.0, 1);  // plain copy
  REQUIRE(dst[0] == 1.5);
}

TEST_CASE("Integer Average divides in integers: exact for every int64, any divisor", "[kernels]") {
  const int64_t big = (int64_t{1} << 62) + 3;  // a double would round this to 2^62
  std::vector<int64_t> in = {big, -big, INT64_MAX, INT64_MIN + 1, 7, -7}, out(in.size());
  scale_copy(out.data(), in.data(), 6, DataType::kInt64, 1.0, 3);
  for (size_t k = 0; k < in.size(); ++k) REQUIRE(out[k] == in[k] / 3);
  // A divisor past the type's range (uint8/int8 at 300 ranks) gives 0, not a crash.
  std::vector<uint8_t> u = {255, 3}, uo(2);
  scale_copy(uo.data(), u.data(), 2, DataType::kUInt8, 1.0, 300);
  REQUIRE(uo == std::vector<uint8_t>{0, 0});
  std::vector<int8_t> s8 = {-128, 127}, so(2);
  scale_copy(so.data(), s8.data(), 2, DataType::kInt8, 1.0, 200);
  REQUIRE(so == std::vector<int8_t>{0, 0});
  // Another factor goes through double and saturates at the type's range.
  std::vector<int8_t> i8 = {100, -100, 3}, bo(3);
  scale_copy(bo.data(), i8.data(), 3, DataType::kInt8, 1000.0, 1);
  REQUIRE(bo == std::vector<int8_t>{127, -128, 127});
  std::vector<int64_t> huge = {INT64_MAX, INT64_MIN}, ho(2);
  scale_copy(ho.data(), huge.data(), 2, DataType::kInt64, 4.0, 1);
  REQUIRE(ho == std::vector<int64_t>{INT64_MAX, INT64_MIN});
}

TEST_CASE("copy_streaming copies like memcpy for every alignment and length", "[kernels]") {
  std::vector<unsigned char> src(700), dst(700);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
  for (size_t from = 0; from < 20; ++from) {
    for (size_t to = 0; to < 20; ++to) {
      for (size_t bytes : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{63}, size_t{64}, size_t{65},
                           size_t{129}, size_t{600}}) {
        std::fill(dst.begin(), dst.end(), 0);
        chorus::detail::copy_streaming(dst.data() + to, src.data() + from, bytes);
        chorus::detail::streaming_stores_done();
        bool untouched = true;  // nothing written outside the destination range
        for (size_t i = 0; i < dst.size(); ++i) untouched = untouched && (i >= to && i < to + bytes ? true : dst[i] == 0);
        INFO("from " << from << ", to " << to << ", bytes " << bytes);
        REQUIRE(std::memcmp(dst.data() + to, src.data() + from, bytes) == 0);
        REQUIRE(untouched);
      }
    }
  }
}
