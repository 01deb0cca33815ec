#pragma once
// Test values for the device tests, in each dtype's own bytes.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "chorus/types.h"
#include "common/half.h"

namespace chorus::test {

// Finite values spanning the type (integers: the whole range, so divisions
// of large int64 values are checked for exactness).
inline std::vector<char> random_elements(chorus::DataType dtype, int64_t count, std::mt19937_64& rng) {
  std::vector<char> out(static_cast<size_t>(count * chorus::dtype_size(dtype)));
  std::uniform_real_distribution<double> real(-1000.0, 1000.0);
  for (int64_t i = 0; i < count; ++i) {
    char* at = out.data() + i * chorus::dtype_size(dtype);
    const double r = real(rng);
    const uint64_t bits = rng();
    switch (dtype) {
      case chorus::DataType::kFloat32: { float v = static_cast<float>(r); std::memcpy(at, &v, 4); break; }
      case chorus::DataType::kFloat64: std::memcpy(at, &r, 8); break;
      case chorus::DataType::kFloat16: { uint16_t h = chorus::detail::float_to_fp16(static_cast<float>(r)); std::memcpy(at, &h, 2); break; }
      case chorus::DataType::kBFloat16: { uint16_t h = chorus::detail::float_to_bf16(static_cast<float>(r)); std::memcpy(at, &h, 2); break; }
      case chorus::DataType::kBool: *at = static_cast<char>(bits & 1u); break;
      default: std::memcpy(at, &bits, static_cast<size_t>(chorus::dtype_size(dtype))); break;
    }
  }
  return out;
}

}  // namespace chorus::test
