#include "algorithms/reduce_kernels.h"

#include <algorithm>
#include <cstring>

#include "common/half.h"

namespace chorus::detail {

namespace {

struct SumOp { template <class T> static T apply(T a, T b) { return a + b; } };
struct ProdOp { template <class T> static T apply(T a, T b) { return a * b; } };
struct MinOp { template <class T> static T apply(T a, T b) { return b < a ? b : a; } };
struct MaxOp { template <class T> static T apply(T a, T b) { return a < b ? b : a; } };

// Plain loops over restrict pointers: GCC vectorizes these at -O2/-O3.
template <class T, class Op>
void reduce_typed(T* __restrict inout, const T* __restrict in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) inout[i] = Op::apply(inout[i], in[i]);
}

// Half types: widen to float32, reduce, round back.
template <class Op, float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_half(uint16_t* __restrict inout, const uint16_t* __restrict in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) inout[i] = FromFloat(Op::apply(ToFloat(inout[i]), ToFloat(in[i])));
}

template <class Op>
void reduce_dispatch(void* inout, const void* in, int64_t n, DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: reduce_typed<uint8_t, Op>(static_cast<uint8_t*>(inout), static_cast<const uint8_t*>(in), n); break;
    case DataType::kInt8: reduce_typed<int8_t, Op>(static_cast<int8_t*>(inout), static_cast<const int8_t*>(in), n); break;
    case DataType::kInt32: reduce_typed<int32_t, Op>(static_cast<int32_t*>(inout), static_cast<const int32_t*>(in), n); break;
    case DataType::kInt64: reduce_typed<int64_t, Op>(static_cast<int64_t*>(inout), static_cast<const int64_t*>(in), n); break;
    case DataType::kFloat32: reduce_typed<float, Op>(static_cast<float*>(inout), static_cast<const float*>(in), n); break;
    case DataType::kFloat64: reduce_typed<double, Op>(static_cast<double*>(inout), static_cast<const double*>(in), n); break;
    case DataType::kFloat16:
      reduce_half<Op, fp16_to_float, float_to_fp16>(static_cast<uint16_t*>(inout), static_cast<const uint16_t*>(in), n);
      break;
    case DataType::kBFloat16:
      reduce_half<Op, bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(inout), static_cast<const uint16_t*>(in), n);
      break;
    case DataType::kBool: break;  // handled by the caller
  }
}

void reduce_bool(uint8_t* __restrict inout, const uint8_t* __restrict in, int64_t n, bool is_and) {
  if (is_and) {
    for (int64_t i = 0; i < n; ++i) inout[i] = static_cast<uint8_t>((inout[i] != 0) & (in[i] != 0));
  } else {
    for (int64_t i = 0; i < n; ++i) inout[i] = static_cast<uint8_t>((inout[i] != 0) | (in[i] != 0));
  }
}

template <class T>
void scale_float(T* dst, const T* src, int64_t n, T factor) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
}

template <class T>
void scale_int(T* dst, const T* src, int64_t n, double factor, double divisor) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<double>(src[i]) * factor / divisor);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale_half(uint16_t* dst, const uint16_t* src, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FromFloat(ToFloat(src[i]) * factor);
}

}  // namespace

bool reduction_supported(DataType dtype, ReduceOp op) {
  if (dtype == DataType::kBool) return op == ReduceOp::kMin || op == ReduceOp::kMax;
  return true;
}

void reduce_into(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op) {
  if (count <= 0) return;
  if (dtype == DataType::kBool) {
    reduce_bool(static_cast<uint8_t*>(inout), static_cast<const uint8_t*>(in), count, op == ReduceOp::kMin);
    return;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: reduce_dispatch<SumOp>(inout, in, count, dtype); break;
    case ReduceOp::kProduct: reduce_dispatch<ProdOp>(inout, in, count, dtype); break;
    case ReduceOp::kMin: reduce_dispatch<MinOp>(inout, in, count, dtype); break;
    case ReduceOp::kMax: reduce_dispatch<MaxOp>(inout, in, count, dtype); break;
  }
}

void scale_copy(void* dst, const void* src, int64_t count, DataType dtype, double factor,
                int64_t divisor) {
  if (count <= 0) return;
  if (factor == 1.0 && divisor == 1) {
    if (dst != src) std::memmove(dst, src, static_cast<size_t>(count * dtype_size(dtype)));
    return;
  }
  const double f = factor / static_cast<double>(divisor);
  const double d = static_cast<double>(divisor);
  switch (dtype) {
    case DataType::kFloat32: scale_float(static_cast<float*>(dst), static_cast<const float*>(src), count, static_cast<float>(f)); break;
    case DataType::kFloat64: scale_float(static_cast<double*>(dst), static_cast<const double*>(src), count, f); break;
    case DataType::kFloat16:
      scale_half<fp16_to_float, float_to_fp16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, static_cast<float>(f));
      break;
    case DataType::kBFloat16:
      scale_half<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, static_cast<float>(f));
      break;
    case DataType::kUInt8: scale_int(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count, factor, d); break;
    case DataType::kInt8: scale_int(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count, factor, d); break;
    case DataType::kInt32: scale_int(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, factor, d); break;
    case DataType::kInt64: scale_int(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, factor, d); break;
    case DataType::kBool: if (dst != src) std::memmove(dst, src, static_cast<size_t>(count)); break;
  }
}

}  // namespace chorus::detail
