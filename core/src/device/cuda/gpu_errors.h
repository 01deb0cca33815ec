#pragma once
// CUDA and NCCL results turned into messages that name the failed call, and
// into Status. Only code under core/src/device/cuda includes CUDA or NCCL headers.

#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "chorus/status.h"

namespace chorus::detail::gpu {

/// "cudaMalloc(fusion buffer) failed: out of memory (cudaErrorMemoryAllocation)".
std::string cuda_error_text(cudaError_t result, const std::string& call);
/// "ncclAllReduce failed: unhandled system error (ncclSystemError): <NCCL's last error>".
/// `comm` (may be null) adds ncclGetLastError's detail when NCCL has one.
std::string nccl_error_text(ncclResult_t result, const std::string& call, ncclComm_t comm = nullptr);

/// OK for cudaSuccess, otherwise an unknown error with cuda_error_text.
Status cuda_status(cudaError_t result, const std::string& call);
/// OK for ncclSuccess, otherwise an unknown error with nccl_error_text
/// (ncclInvalidArgument / ncclInvalidUsage are invalid-argument errors).
Status nccl_status(ncclResult_t result, const std::string& call, ncclComm_t comm = nullptr);

/// NCCL's enum name for a result, e.g. "ncclSystemError".
const char* nccl_result_name(ncclResult_t result);

}  // namespace chorus::detail::gpu
