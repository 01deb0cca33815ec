#include "device/cuda/gpu_errors.h"

namespace chorus::detail::gpu {

std::string cuda_error_text(cudaError_t result, const std::string& call) {
  return call + " failed: " + cudaGetErrorString(result) + " (" + cudaGetErrorName(result) + ")";
}

const char* nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult (unknown value)";
  }
}

std::string nccl_error_text(ncclResult_t result, const std::string& call, ncclComm_t comm) {
  std::string text = call + " failed: " + ncclGetErrorString(result) + " (" + nccl_result_name(result) + ")";
  // ncclGetLastError accepts a null communicator (the thread's last error).
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && detail[0] != '\0') text += ": " + std::string(detail);
  return text;
}

Status cuda_status(cudaError_t result, const std::string& call) {
  if (result == cudaSuccess) return Status::ok();
  return Status::unknown_error(cuda_error_text(result, call));
}

Status nccl_status(ncclResult_t result, const std::string& call, ncclComm_t comm) {
  if (result == ncclSuccess) return Status::ok();
  std::string text = nccl_error_text(result, call, comm);
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) return Status::invalid_argument(std::move(text));
  return Status::unknown_error(std::move(text));
}

}  // namespace chorus::detail::gpu
