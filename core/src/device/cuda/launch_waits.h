#pragma once
// What the launch stream waits for on the device before a response's NCCL
// work may touch its tensors: each input's (and output's) ready point on
// its producer's stream, and the streams of outputs the core allocated.
// Waits only: never a host-side synchronize.

#include <vector>

#include <cuda_runtime_api.h>

#include "chorus/status.h"
#include "device/cuda/nccl_device_operations.h"
#include "engine/tensor_entry.h"

namespace chorus::detail::gpu {

/// `stream` waits for every entry's ready event (settings.ready_event, and
/// output_ready_event when there is one), each distinct event once; an entry
/// without one makes it wait for everything queued so far on the legacy
/// default stream of `device`.
Status wait_ready_points(const std::vector<TensorEntry>& entries, const NcclOperationsSettings& settings, int device,
                         cudaStream_t stream);

/// `stream` waits for the current end of each of `streams` (a run of one
/// stream waited once; `stream` itself skipped).
Status wait_for_streams(const std::vector<cudaStream_t>& streams, int device, cudaStream_t stream);

}  // namespace chorus::detail::gpu
