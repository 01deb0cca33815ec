#include "device_stream.h"

#include <type_traits>
#include <utility>

#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "chorus/error.h"

namespace chorus {
namespace torch_adapter {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

// c10::Stream::id() is not the cudaStream_t: CUDA pool streams pack a pool
// kind and index into it (1.13 and 2.x alike), and only CUDAStream::stream()
// in libc10_cuda unpacks it. LibTorch 2.2+ has the device-generic
// Stream::native_handle() (the CUDA guard impl's getStreamNativeHandle, i.e.
// CUDAStream::stream()); older LibTorch has no way to it from libc10 alone.
template <typename S, typename = void>
struct HasNativeHandle : std::false_type {};
template <typename S>
struct HasNativeHandle<S, std::void_t<decltype(std::declval<const S&>().native_handle())>> : std::true_type {};

template <typename S>
void* native_handle_of(const S& stream, const std::string& what) {
  if constexpr (HasNativeHandle<S>::value) {
    return stream.native_handle();
  } else {
    (void)stream;
    invalid(what + ": this LibTorch cannot name a CUDA stream from libc10 (c10::Stream::native_handle is "
                   "LibTorch 2.2 or newer); build the adapter against a newer LibTorch for CUDA tensors");
  }
}

}  // namespace

void* current_cuda_stream(const c10::Device& device, const std::string& what) {
  if (!device.is_cuda()) invalid(what + ": " + device.str() + " is not a CUDA device");
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) {
    invalid(what + ": the tensor is on " + device.str() + " but this LibTorch has no CUDA support (libc10_cuda is not loaded)");
  }
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  return native_handle_of(stream, what);
}

}  // namespace torch_adapter
}  // namespace chorus
