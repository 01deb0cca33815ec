#pragma once
// The CUDA stream a torch::Tensor's producer wrote it on, found through
// libc10's device-generic guard registry so that one source builds against
// a CPU-only LibTorch and works against a CUDA one. Private to the adapter.

#include <string>
#include <type_traits>
#include <utility>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/util/Exception.h>

namespace chorus {
namespace torch_adapter {

/// Throws InvalidArgumentError "<what>: <why>".
[[noreturn]] void refuse_stream(const std::string& what, const std::string& why);

// c10::Stream::id() is not the cudaStream_t: CUDA pool streams pack a pool
// kind and index into it (1.13 and 2.x alike), and only CUDAStream::stream()
// in libc10_cuda unpacks it. LibTorch 2.2+ has the device-generic
// DeviceGuardImplInterface::getStreamNativeHandle(Stream) (the CUDA guard
// impl returns CUDAStream(s).stream(); c10::Stream's own accessor, which
// calls it, has been renamed between versions, so it is not used). Older
// LibTorch has no way to it from libc10 alone.
template <typename Impl, typename = void>
struct HasStreamNativeHandle : std::false_type {};
template <typename Impl>
struct HasStreamNativeHandle<
    Impl, std::void_t<decltype(std::declval<const Impl&>().getStreamNativeHandle(std::declval<c10::Stream>()))>>
    : std::true_type {};

/// `stream`'s native handle from the guard impl `impl` (a template so that
/// it compiles against LibTorch without the call, and is tested with fakes).
template <typename Impl>
void* native_stream_handle(const Impl& impl, const c10::Stream& stream, const std::string& what) {
  if constexpr (HasStreamNativeHandle<Impl>::value) {
    try {
      return impl.getStreamNativeHandle(stream);
    } catch (const c10::Error& e) {  // the interface's default: the backend does not say
      refuse_stream(what, std::string("this LibTorch cannot name the CUDA stream: ") + e.what_without_backtrace());
    }
  } else {
    (void)impl;
    (void)stream;
    refuse_stream(what,
                  "this LibTorch cannot name a CUDA stream from libc10 (DeviceGuardImplInterface::"
                  "getStreamNativeHandle is LibTorch 2.2 or newer); build the adapter against a newer LibTorch "
                  "for CUDA tensors");
  }
}

/// The current stream of CUDA `device` on the calling thread as a
/// cudaStream_t (nullptr: the legacy default stream). Throws
/// InvalidArgumentError naming `what` when this LibTorch has no CUDA (no
/// CUDA guard registered: libc10_cuda not loaded) or cannot name the stream.
void* current_cuda_stream(const c10::Device& device, const std::string& what);

}  // namespace torch_adapter
}  // namespace chorus
