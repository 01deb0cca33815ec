// CUDA / NCCL results as messages naming the call (host only: the runtime's
// and NCCL's error strings need no GPU).
#include <catch2/catch.hpp>

#include "device/cuda/gpu_errors.h"

using namespace chorus::detail::gpu;

TEST_CASE("CUDA errors name the call, CUDA's text and the enum", "[host][errors]") {
  CHECK(cuda_error_text(cudaErrorMemoryAllocation, "cudaMalloc(fusion buffer, 64 MiB)") ==
        "cudaMalloc(fusion buffer, 64 MiB) failed: out of memory (cudaErrorMemoryAllocation)");
  CHECK(cuda_status(cudaSuccess, "x").is_ok());
  chorus::Status s = cuda_status(cudaErrorInvalidValue, "cudaMemcpyAsync");
  CHECK(s.code() == chorus::StatusCode::kUnknownError);
  CHECK(s.message().find("cudaMemcpyAsync failed: ") == 0);
}

TEST_CASE("NCCL errors name the call, NCCL's text and the enum", "[host][errors]") {
  const std::string text = nccl_error_text(ncclSystemError, "ncclAllReduce(grad.fused)");
  CHECK(text.find("ncclAllReduce(grad.fused) failed: ") == 0);
  CHECK(text.find("(ncclSystemError)") != std::string::npos);
  CHECK(nccl_status(ncclSuccess, "x").is_ok());
  CHECK(nccl_status(ncclInvalidUsage, "ncclCommInitRank").code() == chorus::StatusCode::kInvalidArgument);
  CHECK(nccl_status(ncclRemoteError, "ncclAllReduce").code() == chorus::StatusCode::kUnknownError);
  CHECK(std::string(nccl_result_name(ncclInProgress)) == "ncclInProgress");
}
