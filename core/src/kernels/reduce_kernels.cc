#include "kernels/reduce_kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/fp16_f16c.h"
#include "common/half.h"

namespace chorus::detail {

namespace {

struct SumOp { template <class T> static T apply(T a, T b) { return a + b; } };
struct ProdOp { template <class T> static T apply(T a, T b) { return a * b; } };
struct MinOp { template <class T> static T apply(T a, T b) { return b < a ? b : a; } };
struct MaxOp { template <class T> static T apply(T a, T b) { return a < b ? b : a; } };

// Plain loops over restrict pointers: GCC vectorizes these at -O2/-O3.
// Two forms: in place (out == a) and out of place (out, a, b all distinct),
// so restrict is never a lie.
template <class T, class Op>
void reduce_typed(T* __restrict inout, const T* __restrict in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) inout[i] = Op::apply(inout[i], in[i]);
}
template <class T, class Op>
void reduce_typed(T* __restrict out, const T* __restrict a, const T* __restrict b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(a[i], b[i]);
}

// Half types: widen to float32, reduce, round back.
template <class Op, float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_half(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = FromFloat(Op::apply(ToFloat(a[i]), ToFloat(b[i])));
}

template <class T, class Op>
void reduce_any(void* out, const void* a, const void* b, int64_t n) {
  if (out == a) {
    reduce_typed<T, Op>(static_cast<T*>(out), static_cast<const T*>(b), n);
  } else {
    reduce_typed<T, Op>(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), n);
  }
}

template <class Op>
void reduce_dispatch(void* out, const void* a, const void* b, int64_t n, DataType dtype) {
  auto* o16 = static_cast<uint16_t*>(out);
  auto* a16 = static_cast<const uint16_t*>(a);
  auto* b16 = static_cast<const uint16_t*>(b);
  switch (dtype) {
    case DataType::kUInt8: reduce_any<uint8_t, Op>(out, a, b, n); break;
    case DataType::kInt8: reduce_any<int8_t, Op>(out, a, b, n); break;
    case DataType::kInt16: reduce_any<int16_t, Op>(out, a, b, n); break;
    case DataType::kInt32: reduce_any<int32_t, Op>(out, a, b, n); break;
    case DataType::kInt64: reduce_any<int64_t, Op>(out, a, b, n); break;
    case DataType::kFloat32: reduce_any<float, Op>(out, a, b, n); break;
    case DataType::kFloat64: reduce_any<double, Op>(out, a, b, n); break;
    case DataType::kFloat16: reduce_half<Op, fp16_to_float, float_to_fp16>(o16, a16, b16, n); break;
    case DataType::kBFloat16: reduce_half<Op, bf16_to_float, float_to_bf16>(o16, a16, b16, n); break;
    case DataType::kBool: break;  // handled by the caller
  }
}

void reduce_bool(uint8_t* out, const uint8_t* a, const uint8_t* __restrict b, int64_t n, bool is_and) {
  if (is_and) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((a[i] != 0) & (b[i] != 0));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((a[i] != 0) | (b[i] != 0));
  }
}

template <class T>
void scale_float(T* dst, const T* src, int64_t n, T factor) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
}

// A double as integer type T, truncated toward zero and held to T's range
// (a cast of an out-of-range double is undefined); NaN becomes 0.
template <class T>
T saturated(double x) {
  constexpr T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  if (!(x == x)) return 0;
  if (x >= static_cast<double>(hi)) return hi;  // for int64, 2^63: the first double past the range
  if (x <= static_cast<double>(lo)) return lo;
  return static_cast<T>(x);
}

// Integers: a plain division (Average) stays in integers, so it is exact
// for every value (a double holds only 53 bits of an int64) and truncates
// toward zero; a factor other than 1 goes through double.
template <class T>
void scale_int(T* dst, const T* src, int64_t n, double factor, int64_t divisor) {
  if (factor == 1.0) {
    // In int64: the divisor (a rank count) may not fit T (uint8 past 255 ranks).
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<int64_t>(src[i]) / divisor);
    return;
  }
  const double dd = static_cast<double>(divisor);
  for (int64_t i = 0; i < n; ++i) dst[i] = saturated<T>(static_cast<double>(src[i]) * factor / dd);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale_half(uint16_t* dst, const uint16_t* src, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FromFloat(ToFloat(src[i]) * factor);
}

}  // namespace

bool reduction_supported(DataType dtype, ReduceOp op) {
  if (!is_valid_reduce_op(static_cast<int>(op))) return false;  // an integer cast in C++ code
  if (dtype == DataType::kBool) return op == ReduceOp::kMin || op == ReduceOp::kMax;
  if (op == ReduceOp::kAdasum) return is_floating(dtype);
  return true;
}

void reduce_to(void* out, const void* a, const void* b, int64_t count, DataType dtype, ReduceOp op) {
  if (count <= 0) return;
  if (dtype == DataType::kFloat16 && f16c_available()) {
    reduce_fp16_f16c(static_cast<uint16_t*>(out), static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                     count, op);
    return;
  }
  if (dtype == DataType::kBool) {
    reduce_bool(static_cast<uint8_t*>(out), static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), count,
                op == ReduceOp::kMin);
    return;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: reduce_dispatch<SumOp>(out, a, b, count, dtype); break;
    case ReduceOp::kProduct: reduce_dispatch<ProdOp>(out, a, b, count, dtype); break;
    case ReduceOp::kMin: reduce_dispatch<MinOp>(out, a, b, count, dtype); break;
    case ReduceOp::kMax: reduce_dispatch<MaxOp>(out, a, b, count, dtype); break;
    case ReduceOp::kAdasum: break;  // not elementwise: dataplane/algorithms/adasum_allreduce.cc
  }
}

void reduce_into(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op) {
  reduce_to(inout, inout, in, count, dtype, op);
}

void scale_copy(void* dst, const void* src, int64_t count, DataType dtype, double factor,
                int64_t divisor) {
  if (count <= 0) return;
  if (factor == 1.0 && divisor == 1) {
    if (dst != src) std::memmove(dst, src, static_cast<size_t>(count * dtype_size(dtype)));
    return;
  }
  const double f = factor / static_cast<double>(divisor);
  const int64_t d = divisor;
  switch (dtype) {
    case DataType::kFloat32: scale_float(static_cast<float*>(dst), static_cast<const float*>(src), count, static_cast<float>(f)); break;
    case DataType::kFloat64: scale_float(static_cast<double*>(dst), static_cast<const double*>(src), count, f); break;
    case DataType::kFloat16:
      if (f16c_available()) {
        scale_fp16_f16c(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, static_cast<float>(f));
      } else {
        scale_half<fp16_to_float, float_to_fp16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                                                 static_cast<float>(f));
      }
      break;
    case DataType::kBFloat16:
      scale_half<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, static_cast<float>(f));
      break;
    case DataType::kUInt8: scale_int(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count, factor, d); break;
    case DataType::kInt8: scale_int(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count, factor, d); break;
    case DataType::kInt16: scale_int(static_cast<int16_t*>(dst), static_cast<const int16_t*>(src), count, factor, d); break;
    case DataType::kInt32: scale_int(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, factor, d); break;
    case DataType::kInt64: scale_int(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, factor, d); break;
    case DataType::kBool: if (dst != src) std::memmove(dst, src, static_cast<size_t>(count)); break;
  }
}

}  // namespace chorus::detail
