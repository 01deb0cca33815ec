#pragma once
// Writing and reading test values of any Chorus dtype through double.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "chorus/types.h"
#include "common/half.h"

namespace chorus::test {

inline void store(void* base, int64_t i, DataType dt, double v) {
  char* p = static_cast<char*>(base) + i * dtype_size(dt);
  switch (dt) {
    case DataType::kUInt8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case DataType::kInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case DataType::kInt16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
    case DataType::kBool: { uint8_t x = v != 0 ? 1 : 0; std::memcpy(p, &x, 1); break; }
    case DataType::kInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case DataType::kInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case DataType::kFloat32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case DataType::kFloat64: std::memcpy(p, &v, 8); break;
    case DataType::kFloat16: { uint16_t x = detail::float_to_fp16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DataType::kBFloat16: { uint16_t x = detail::float_to_bf16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
  }
}

inline double load(const void* base, int64_t i, DataType dt) {
  const char* p = static_cast<const char*>(base) + i * dtype_size(dt);
  switch (dt) {
    case DataType::kUInt8:
    case DataType::kBool: { uint8_t x; std::memcpy(&x, p, 1); return x; }
    case DataType::kInt8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case DataType::kInt16: { int16_t x; std::memcpy(&x, p, 2); return x; }
    case DataType::kInt32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DataType::kInt64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case DataType::kFloat32: { float x; std::memcpy(&x, p, 4); return x; }
    case DataType::kFloat64: { double x; std::memcpy(&x, p, 8); return x; }
    case DataType::kFloat16: { uint16_t x; std::memcpy(&x, p, 2); return detail::fp16_to_float(x); }
    case DataType::kBFloat16: { uint16_t x; std::memcpy(&x, p, 2); return detail::bf16_to_float(x); }
  }
  return 0;
}

/// Relative error allowed when a result is not exact (Average of floats).
inline double tolerance(DataType dt) {
  switch (dt) {
    case DataType::kFloat16: return 1.0 / 1024;
    case DataType::kBFloat16: return 1.0 / 128;
    case DataType::kFloat32: return 1e-6;
    case DataType::kFloat64: return 1e-12;
    default: return 0;
  }
}

}  // namespace chorus::test
