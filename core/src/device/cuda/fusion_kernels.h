#pragma once
// The batched copy kernels behind the device fusion buffer: one launch copies
// up to kMaxCopiesPerLaunch tensors, scaling each element on the way
// (prescale into the buffer, postscale / the Average divisor out of it),
// with the arithmetic of the CPU path (kernels/reduce_kernels.h scale_copy).

#include <cstdint>

#include <cuda_runtime_api.h>

#include "chorus/types.h"
#include "device/cuda/copy_plan.h"

namespace chorus::detail::gpu {

/// One launch's copies, passed to the kernel by value (no upload, no sync).
struct CopyBatch {
  const void* src[kMaxCopiesPerLaunch];
  void* dst[kMaxCopiesPerLaunch];
  int64_t count[kMaxCopiesPerLaunch];  ///< elements
  int size = 0;                        ///< copies in use
};
// Kernel parameters are limited to 4 KB on every architecture CUDA 13 targets
// (newer GPUs allow more; this leaves room for the scale arguments).
static_assert(sizeof(CopyBatch) <= 4096 - 64, "CopyBatch must fit the kernel parameter space");

/// dst = src * factor / divisor, as scale_copy computes it: floating types
/// multiply by (factor / divisor) in the type's precision (float16 and
/// bfloat16 in float32, rounded to nearest even); integers divide exactly
/// when factor is 1, else go through double, truncate and saturate; bool copies.
struct CopyScale {
  double factor = 1.0;
  int64_t divisor = 1;
  bool identity() const { return factor == 1.0 && divisor == 1; }
};

/// Queues one launch on `stream` (returns at once). The pieces must not
/// overlap. Returns the launch error, if any.
cudaError_t launch_scaled_copies(const CopyBatch& batch, DataType dtype, CopyScale scale, cudaStream_t stream);

}  // namespace chorus::detail::gpu
