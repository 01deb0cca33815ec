#pragma once
// Packing a fused batch of device tensors into the device fusion buffer and
// unpacking the reduced result, a few launches for the whole batch
// (kMaxCopiesPerLaunch tensors each) queued on one stream; nothing waits.

#include <vector>

#include <cuda_runtime_api.h>

#include "chorus/status.h"
#include "chorus/types.h"
#include "device/cuda/copy_plan.h"
#include "device/cuda/fusion_kernels.h"

namespace chorus::detail::gpu {

/// One tensor of the batch: device input and output of `count` elements.
struct DevicePiece {
  const void* input = nullptr;
  void* output = nullptr;
  int64_t count = 0;
};

/// Queues the copies of every piece's input into `buffer` at the plan's
/// offsets, multiplied by `prescale`. `plan` comes from plan_copies over the
/// pieces' counts; `buffer` holds at least plan.buffer_bytes.
Status pack_pieces(const std::vector<DevicePiece>& pieces, DataType dtype, double prescale, const CopyPlan& plan,
                   void* buffer, cudaStream_t stream);

/// Queues the copies out of `buffer` into every piece's output, scaled by
/// `postscale` (postscale factor and the Average divisor).
Status unpack_pieces(const std::vector<DevicePiece>& pieces, DataType dtype, CopyScale postscale,
                     const CopyPlan& plan, const void* buffer, cudaStream_t stream);

}  // namespace chorus::detail::gpu
