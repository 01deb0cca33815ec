#pragma once
// Walks a plan (device/cuda/nccl_plan.h) on one stream: each step becomes its NCCL
// call or its batched copy. Decides nothing: what runs is the plan's.

#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "chorus/status.h"
#include "device/cuda/nccl_plan.h"
#include "device/cuda/nccl_wait.h"

namespace chorus::detail::gpu {

/// Where the plan's buffers are on this rank.
struct PlanBuffers {
  std::vector<const void*> inputs;  ///< per tensor
  std::vector<void*> outputs;       ///< per tensor (the input itself in place)
  void* fusion = nullptr;           ///< at least plan.fusion_bytes
};

/// The communicators a plan's calls run on (device/cuda/nccl_plan.h CommScope):
/// host and across are null unless the set runs the hierarchical allreduce.
struct PlanComms {
  ncclComm_t set = nullptr, host = nullptr, across = nullptr;
  ncclComm_t of(CommScope scope) const {
    return scope == CommScope::kHost ? host : scope == CommScope::kAcrossHosts ? across : set;
  }
};

ncclDataType_t nccl_dtype(DataType dtype);
ncclRedOp_t nccl_op(ReduceOp op);  ///< never called with Average (the plan sums)

/// Queues every step of `plan` on `stream`, each NCCL call on its
/// communicator of `comms`. They are non-blocking: a call
/// that returns ncclInProgress (connection setup, ncclGroupEnd) is waited
/// for until `deadline` (device/cuda/nccl_wait.h); `what` names the tensors in the
/// communicator's error (the caller prefixes them to the rest). The first failure is returned (a timeout as kTimeout: the
/// caller aborts the communicator); an open group is closed first, which may
/// still queue work, so after any failure the caller must treat the stream
/// as holding work on the buffers.
Status launch_plan(const NcclPlan& plan, const PlanBuffers& buffers, const PlanComms& comms, cudaStream_t stream,
                   const OpDeadline& deadline, const std::string& what);

}  // namespace chorus::detail::gpu
