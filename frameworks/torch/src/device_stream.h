#pragma once
// The CUDA stream a torch::Tensor's producer wrote it on, found through
// libc10's device-generic guard registry so that one source builds against
// a CPU-only LibTorch and works against a CUDA one. Private to the adapter.

#include <string>

#include <c10/core/Device.h>

namespace chorus {
namespace torch_adapter {

/// The current stream of CUDA `device` on the calling thread as a
/// cudaStream_t (nullptr: the legacy default stream). Throws
/// InvalidArgumentError naming `what` when this LibTorch has no CUDA (no
/// CUDA guard registered: libc10_cuda not loaded) or cannot name the stream.
void* current_cuda_stream(const c10::Device& device, const std::string& what);

}  // namespace torch_adapter
}  // namespace chorus
