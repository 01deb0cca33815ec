#include "gpu/device_stream.h"

#include <string>
#include <utility>

#include "gpu/gpu_errors.h"

namespace chorus::detail::gpu {

namespace {
Status use_device(int device) {
  return cuda_status(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}
}  // namespace

DeviceStream::~DeviceStream() { reset(); }

DeviceStream::DeviceStream(DeviceStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(std::exchange(other.device_, -1)) {}

DeviceStream& DeviceStream::operator=(DeviceStream&& other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceStream::reset() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);  // returns at once; pending work still completes
  stream_ = nullptr;
}

Status DeviceStream::create(int device, DeviceStream* out) {
  Status s = use_device(device);
  if (!s.is_ok()) return s;
  int least = 0, greatest = 0;  // "greatest" priority is the numerically lowest
  s = cuda_status(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  if (!s.is_ok()) return s;
  DeviceStream made;
  s = cuda_status(cudaStreamCreateWithPriority(&made.stream_, cudaStreamNonBlocking, greatest),
                  "cudaStreamCreateWithPriority(device " + std::to_string(device) + ")");
  if (!s.is_ok()) return s;
  made.device_ = device;
  *out = std::move(made);
  return Status::ok();
}

DeviceEvent::~DeviceEvent() { reset(); }

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void DeviceEvent::reset() {
  if (event_ != nullptr) cudaEventDestroy(event_);
  event_ = nullptr;
}

Status DeviceEvent::create(int device, DeviceEvent* out) {
  Status s = use_device(device);
  if (!s.is_ok()) return s;
  DeviceEvent made;
  s = cuda_status(cudaEventCreateWithFlags(&made.event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  if (!s.is_ok()) return s;
  *out = std::move(made);
  return Status::ok();
}

Status DeviceEvent::record(cudaStream_t stream) { return cuda_status(cudaEventRecord(event_, stream), "cudaEventRecord"); }

Status DeviceEvent::make_wait(cudaStream_t stream) const {
  return cuda_status(cudaStreamWaitEvent(stream, event_, 0), "cudaStreamWaitEvent");
}

Status DeviceEvent::query() const {
  const cudaError_t r = cudaEventQuery(event_);
  if (r == cudaErrorNotReady) return Status::in_progress();
  return cuda_status(r, "cudaEventQuery");
}

}  // namespace chorus::detail::gpu
