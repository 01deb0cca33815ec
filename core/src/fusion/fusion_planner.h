#pragma once
// Packs ready allreduces, and ready allgathers, into fused responses.
// Allreduces fuse when they share (dtype, op, prescale, postscale, device);
// allgathers when they share (dtype, device). A bucket holds at most
// `threshold_bytes` (for an allgather: its whole output, every rank's rows);
// a single larger tensor gets a bucket of its own. The planner looks ahead:
// a tensor joins the first open bucket it fits, so interleaved dtypes still
// fuse. Runs on the coordinator only, so every rank executes the same plan.

#include <cstdint>
#include <vector>

#include "negotiation/coordinator.h"

namespace chorus::detail {

std::vector<Response> plan_fusion(std::vector<ReadyTensor> ready, int64_t threshold_bytes);

}  // namespace chorus::detail
