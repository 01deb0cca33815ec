#include "device/cuda/device_stream.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device/cuda/gpu_errors.h"

namespace chorus::detail::gpu {

namespace {
Status use_device(int device) {
  return cuda_status(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}

/// Released events per device, handed out again by DeviceEvent::create.
/// Never destroyed at exit: CUDA may already be torn down by then.
class EventPool {
 public:
  static EventPool& get() {
    static EventPool* pool = new EventPool();  // NOLINT: deliberately outlives static destruction
    return *pool;
  }
  cudaEvent_t take(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<cudaEvent_t>& free = free_[device];
    if (free.empty()) return nullptr;
    cudaEvent_t e = free.back();
    free.pop_back();
    return e;
  }
  void give(int device, cudaEvent_t e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<cudaEvent_t>& free = free_[device];
      if (free.size() < kMaxFree) {
        free.push_back(e);
        return;
      }
    }
    cudaEventDestroy(e);
  }

 private:
  static constexpr size_t kMaxFree = 4096;  // more than a storm keeps in flight
  std::mutex mu_;
  std::map<int, std::vector<cudaEvent_t>> free_;
};
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

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(std::exchange(other.device_, -1)) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceEvent::reset() {
  if (event_ != nullptr) EventPool::get().give(device_, event_);
  event_ = nullptr;
  device_ = -1;
}

Status DeviceEvent::create(int device, DeviceEvent* out) {
  DeviceEvent made;
  made.device_ = device;
  made.event_ = EventPool::get().take(device);
  if (made.event_ == nullptr) {
    Status s = use_device(device);
    if (s.is_ok())
      s = cuda_status(cudaEventCreateWithFlags(&made.event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    if (!s.is_ok()) {
      made.event_ = nullptr;
      return s;
    }
  }
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
