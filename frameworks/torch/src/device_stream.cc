#include "device_stream.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "chorus/error.h"

namespace chorus {
namespace torch_adapter {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

}  // namespace

void refuse_stream(const std::string& what, const std::string& why) { invalid(what + ": " + why); }

void* current_cuda_stream(const c10::Device& device, const std::string& what) {
  if (!device.is_cuda()) invalid(what + ": " + device.str() + " is not a CUDA device");
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) {
    invalid(what + ": the tensor is on " + device.str() + " but this LibTorch has no CUDA support (libc10_cuda is not loaded)");
  }
  const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return native_stream_handle(*impl, impl->getStream(device), what);
}

}  // namespace torch_adapter
}  // namespace chorus
