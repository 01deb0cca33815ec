#pragma once
// Walks a plan (gpu/nccl_plan.h) on one stream: each step becomes its NCCL
// call or its batched copy. Decides nothing: what runs is the plan's.

#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "chorus/status.h"
#include "gpu/nccl_plan.h"

namespace chorus::detail::gpu {

/// Where the plan's buffers are on this rank.
struct PlanBuffers {
  std::vector<const void*> inputs;  ///< per tensor
  std::vector<void*> outputs;       ///< per tensor (the input itself in place)
  void* fusion = nullptr;           ///< at least plan.fusion_bytes
};

ncclDataType_t nccl_dtype(DataType dtype);
ncclRedOp_t nccl_op(ReduceOp op);  ///< never called with Average (the plan sums)

/// Queues every step of `plan` on `stream` (returns at once). The first
/// failure is returned; an open group is closed first.
Status launch_plan(const NcclPlan& plan, const PlanBuffers& buffers, ncclComm_t comm, cudaStream_t stream);

}  // namespace chorus::detail::gpu
