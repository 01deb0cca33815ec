#include "device/cuda/device_fusion.h"

#include <string>

#include "device/cuda/gpu_errors.h"

namespace chorus::detail::gpu {

namespace {

enum class Direction { kPack, kUnpack };

Status run_launches(const std::vector<DevicePiece>& pieces, DataType dtype, CopyScale scale, const CopyPlan& plan,
                    char* buffer, Direction direction, cudaStream_t stream) {
  if (plan.offsets.size() != pieces.size()) {
    return Status::invalid_argument("the copy plan has " + std::to_string(plan.offsets.size()) +
                                    " pieces, the batch " + std::to_string(pieces.size()));
  }
  const char* what = direction == Direction::kPack ? "pack into the fusion buffer" : "unpack from the fusion buffer";
  for (size_t l = 0; l < plan.launches.size(); ++l) {
    CopyBatch batch;
    for (size_t index : plan.launches[l]) {
      const DevicePiece& p = pieces[index];
      char* slot = buffer + plan.offsets[index];
      batch.src[batch.size] = direction == Direction::kPack ? p.input : slot;
      batch.dst[batch.size] = direction == Direction::kPack ? slot : p.output;
      batch.count[batch.size] = p.count;
      ++batch.size;
    }
    cudaError_t r = launch_scaled_copies(batch, dtype, scale, stream);
    if (r != cudaSuccess) {
      return cuda_status(r, std::string(what) + " (launch " + std::to_string(l + 1) + " of " +
                                std::to_string(plan.launches.size()) + ", " + dtype_name(dtype) + ")");
    }
  }
  return Status::ok();
}

}  // namespace

Status pack_pieces(const std::vector<DevicePiece>& pieces, DataType dtype, double prescale, const CopyPlan& plan,
                   void* buffer, cudaStream_t stream) {
  return run_launches(pieces, dtype, CopyScale{prescale, 1}, plan, static_cast<char*>(buffer), Direction::kPack,
                      stream);
}

Status unpack_pieces(const std::vector<DevicePiece>& pieces, DataType dtype, CopyScale postscale,
                     const CopyPlan& plan, const void* buffer, cudaStream_t stream) {
  // The kernels only read the buffer when unpacking.
  return run_launches(pieces, dtype, postscale, plan, const_cast<char*>(static_cast<const char*>(buffer)),
                      Direction::kUnpack, stream);
}

}  // namespace chorus::detail::gpu
