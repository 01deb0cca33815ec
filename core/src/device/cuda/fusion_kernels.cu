#include "device/cuda/fusion_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace chorus::detail::gpu {

namespace {

constexpr int kThreads = 256;

// Identity copies move bytes, in 16-byte vectors when both ends allow it
// (the fusion buffer side always does: offsets are padded to 16 bytes).
__global__ void copy_bytes_kernel(CopyBatch batch, int64_t element_size) {
  const int c = blockIdx.y;
  const char* src = static_cast<const char*>(batch.src[c]);
  char* dst = static_cast<char*>(batch.dst[c]);
  const int64_t bytes = batch.count[c] * element_size;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15u) == 0) {
    const int64_t vectors = bytes / 16;
    for (int64_t i = first; i < vectors; i += step) {
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    }
    done = vectors * 16;
  }
  for (int64_t i = done + first; i < bytes; i += step) dst[i] = src[i];
}

template <class T, class Scaler>
__global__ void scaled_copy_kernel(CopyBatch batch, Scaler scaler) {
  const int c = blockIdx.y;
  const T* src = static_cast<const T*>(batch.src[c]);
  T* dst = static_cast<T*>(batch.dst[c]);
  const int64_t n = batch.count[c];
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    dst[i] = scaler(src[i]);
  }
}

template <class T>
struct MultiplyBy {
  T factor;
  __device__ T operator()(T x) const { return x * factor; }
};

struct HalfMultiplyBy {
  float factor;
  __device__ uint16_t operator()(uint16_t x) const {
    return __half_as_ushort(__float2half_rn(__half2float(__ushort_as_half(x)) * factor));
  }
};

struct Bf16MultiplyBy {
  float factor;
  __device__ uint16_t operator()(uint16_t x) const {
    return __bfloat16_as_ushort(__float2bfloat16_rn(__bfloat162float(__ushort_as_bfloat16(x)) * factor));
  }
};

// Integers with factor 1: divide in int64 (exact; the divisor may not fit T).
template <class T>
struct DivideBy {
  int64_t divisor;
  __device__ T operator()(T x) const { return static_cast<T>(static_cast<int64_t>(x) / divisor); }
};

template <class T> struct IntRange;
template <> struct IntRange<uint8_t> { static constexpr uint8_t lo = 0, hi = UINT8_MAX; };
template <> struct IntRange<int8_t> { static constexpr int8_t lo = INT8_MIN, hi = INT8_MAX; };
template <> struct IntRange<int16_t> { static constexpr int16_t lo = INT16_MIN, hi = INT16_MAX; };
template <> struct IntRange<int32_t> { static constexpr int32_t lo = INT32_MIN, hi = INT32_MAX; };
template <> struct IntRange<int64_t> { static constexpr int64_t lo = INT64_MIN, hi = INT64_MAX; };

// Integers with another factor: through double, truncated toward zero and
// held to T's range, NaN -> 0 (reduce_kernels.cc `saturated`).
template <class T>
struct ScaleThroughDouble {
  double factor, divisor;
  __device__ T operator()(T x) const {
    const double v = static_cast<double>(x) * factor / divisor;
    if (!(v == v)) return 0;
    if (v >= static_cast<double>(IntRange<T>::hi)) return IntRange<T>::hi;  // int64: 2^63, past the range
    if (v <= static_cast<double>(IntRange<T>::lo)) return IntRange<T>::lo;
    return static_cast<T>(v);
  }
};

dim3 grid_for(const CopyBatch& batch, int64_t element_size) {
  int64_t largest = 0;
  for (int i = 0; i < batch.size; ++i) largest = batch.count[i] > largest ? batch.count[i] : largest;
  const int64_t per_block = static_cast<int64_t>(kThreads) * 8 * (element_size < 4 ? 4 / element_size : 1);
  const int64_t cap = batch.size > 0 && 2048 / batch.size > 4 ? 2048 / batch.size : 4;  // ~2k blocks in all
  int64_t blocks = (largest + per_block - 1) / per_block;
  blocks = blocks < 1 ? 1 : (blocks > cap ? cap : blocks);
  return dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(batch.size));
}

template <class T, class Scaler>
void launch(const CopyBatch& batch, Scaler scaler, cudaStream_t stream) {
  scaled_copy_kernel<T, Scaler><<<grid_for(batch, sizeof(T)), kThreads, 0, stream>>>(batch, scaler);
}

template <class T>
void launch_integer(const CopyBatch& batch, CopyScale scale, cudaStream_t stream) {
  if (scale.factor == 1.0) {
    launch<T>(batch, DivideBy<T>{scale.divisor}, stream);
  } else {
    launch<T>(batch, ScaleThroughDouble<T>{scale.factor, static_cast<double>(scale.divisor)}, stream);
  }
}

int64_t element_size_of(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: case DataType::kInt8: case DataType::kBool: return 1;
    case DataType::kInt16: case DataType::kFloat16: case DataType::kBFloat16: return 2;
    case DataType::kInt32: case DataType::kFloat32: return 4;
    case DataType::kInt64: case DataType::kFloat64: return 8;
  }
  return 1;
}

}  // namespace

cudaError_t launch_scaled_copies(const CopyBatch& batch, DataType dtype, CopyScale scale, cudaStream_t stream) {
  if (batch.size <= 0) return cudaSuccess;
  if (batch.size > kMaxCopiesPerLaunch) return cudaErrorInvalidValue;
  // A <<<>>> launch reports through the thread's last error, which an
  // earlier call left there too: a cudaEventQuery that found its event not
  // yet complete leaves cudaErrorNotReady (seen on an H200: the launch after
  // such a query read as failed). Cleared first, so what is read after is
  // this launch's. (A sticky error is not cleared: every call reports it.)
  (void)cudaGetLastError();
  const int64_t esize = element_size_of(dtype);
  if (scale.identity() || dtype == DataType::kBool) {
    copy_bytes_kernel<<<grid_for(batch, esize), kThreads, 0, stream>>>(batch, esize);
    return cudaGetLastError();
  }
  const double f = scale.factor / static_cast<double>(scale.divisor);  // as scale_copy folds them
  switch (dtype) {
    case DataType::kFloat32: launch<float>(batch, MultiplyBy<float>{static_cast<float>(f)}, stream); break;
    case DataType::kFloat64: launch<double>(batch, MultiplyBy<double>{f}, stream); break;
    case DataType::kFloat16: launch<uint16_t>(batch, HalfMultiplyBy{static_cast<float>(f)}, stream); break;
    case DataType::kBFloat16: launch<uint16_t>(batch, Bf16MultiplyBy{static_cast<float>(f)}, stream); break;
    case DataType::kUInt8: launch_integer<uint8_t>(batch, scale, stream); break;
    case DataType::kInt8: launch_integer<int8_t>(batch, scale, stream); break;
    case DataType::kInt16: launch_integer<int16_t>(batch, scale, stream); break;
    case DataType::kInt32: launch_integer<int32_t>(batch, scale, stream); break;
    case DataType::kInt64: launch_integer<int64_t>(batch, scale, stream); break;
    case DataType::kBool: break;
  }
  return cudaGetLastError();
}

}  // namespace chorus::detail::gpu
