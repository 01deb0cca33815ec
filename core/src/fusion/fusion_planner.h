#pragma once
// Packs ready allreduces, and ready allgathers, into fused responses.
// Allreduces fuse when they share (dtype, op, prescale, postscale, device
// kind); allgathers when they share (dtype, device kind): CPU and CUDA
// tensors never fuse. A bucket holds at most
// `threshold_bytes` (for an allgather: its whole output, every rank's rows);
// a single larger tensor gets a bucket of its own. The planner looks ahead:
// a tensor joins the first open bucket it fits, so interleaved dtypes still
// fuse. Runs on the coordinator only, so every rank executes the same plan.

#include <cstdint>
#include <vector>

#include "negotiation/coordinator.h"
#include "negotiation/response_cache.h"

namespace chorus::detail {

/// Tensors negotiated in full (the Coordinator's ready tensors).
std::vector<Response> plan_fusion(std::vector<ReadyTensor> ready, int64_t threshold_bytes);

/// Tensors negotiated by cache bits, as their slots in `cache`: responses
/// that name slots. Slots fuse only with slots, so a response names either
/// tensors or slots.
std::vector<Response> plan_fusion(const std::vector<int32_t>& slots, const ResponseCache& cache,
                                  int64_t threshold_bytes);

}  // namespace chorus::detail
