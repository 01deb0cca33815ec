#pragma once
// Where each tensor of a fused batch lies in the device fusion buffer, and
// how the copies into and out of it split into kernel launches. Pure host
// code with no CUDA types, so it is unit-tested without a GPU.
//
// Every rank computes the same layout from the same response (the sizes and
// order of the tensors), never from where its tensors lie, so all ranks
// reduce buffers of the same length.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chorus::detail::gpu {

/// Each tensor starts at a multiple of this many bytes in the fusion buffer,
/// so the kernels can copy in 16-byte vectors (as Horovod pads).
constexpr int64_t kFusionAlignment = 16;
/// Copies per launch: their pointers and counts travel by value as kernel
/// parameters, which must stay within the portable 4 KB (Horovod uses 160).
constexpr int kMaxCopiesPerLaunch = 160;

/// `bytes` rounded up to kFusionAlignment.
int64_t padded_bytes(int64_t bytes);

/// The pieces one launch copies: indices into the batch, in order.
using LaunchPieces = std::vector<size_t>;

struct CopyPlan {
  std::vector<int64_t> offsets;       ///< byte offset of each piece in the fusion buffer
  int64_t buffer_bytes = 0;           ///< padded total: what the collective reduces
  std::vector<LaunchPieces> launches;  ///< the non-empty pieces, at most max_per_launch a launch
};

/// Lays out pieces of `counts[i]` elements of `element_size` bytes and
/// groups the non-empty ones into launches. Fails (returns false, `*error`
/// names the piece or the limit) on a negative count, a bad element size or
/// max_per_launch outside 1..kMaxCopiesPerLaunch.
bool plan_copies(const std::vector<int64_t>& counts, int64_t element_size, int max_per_launch, CopyPlan* plan,
                 std::string* error);

}  // namespace chorus::detail::gpu
