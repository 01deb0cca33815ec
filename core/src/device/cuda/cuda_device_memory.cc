#include "device/cuda/cuda_device_memory.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "device/cuda/device_stream.h"
#include "device/cuda/gpu_errors.h"

namespace chorus::detail::gpu {

namespace {

// The device use_device made current on this thread, one of Chorus's own;
// -1 on the framework's threads (and on ours before their first tensor).
thread_local int t_own_device = -1;

// Puts the current device back after a call that sets another: on the
// framework's thread (enqueue), what it had, its own business; on Chorus's
// threads the device use_device chose. Never what cudaGetDevice reports on
// a thread nobody set (0): cudaSetDevice(0) would make a context on GPU 0.
class CurrentDeviceKept {
 public:
  CurrentDeviceKept() {
    if (t_own_device < 0) ok_ = cudaGetDevice(&device_) == cudaSuccess;
  }
  ~CurrentDeviceKept() {
    if (t_own_device >= 0) {
      cudaSetDevice(t_own_device);
    } else if (ok_) {
      cudaSetDevice(device_);
    }
  }
  CurrentDeviceKept(const CurrentDeviceKept&) = delete;
  CurrentDeviceKept& operator=(const CurrentDeviceKept&) = delete;

 private:
  int device_ = 0;
  bool ok_ = false;
};

class CudaMark final : public DeviceMark {
 public:
  explicit CudaMark(DeviceEvent event) : event_(std::move(event)) {}
  Status query() const override { return event_.query(); }
  void* native() const override { return event_.get(); }

 private:
  DeviceEvent event_;
};

StatusOr<std::shared_ptr<DeviceMark>> record_on(int device, cudaStream_t stream) {
  CurrentDeviceKept kept;
  Status s;
  // A default stream is the current device's: make `device` current for it.
  // (An explicit stream names its device; a reused event needs none current.)
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    s = cuda_status(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  DeviceEvent event;
  if (s.is_ok()) s = DeviceEvent::create(device, &event);
  if (s.is_ok()) s = event.record(stream);
  if (!s.is_ok()) return s;
  return std::shared_ptr<DeviceMark>(std::make_shared<CudaMark>(std::move(event)));
}

// A device this process can use, or an invalid argument saying why not (no
// driver, no device, an index past the last), before any other CUDA call
// fails with a less telling message.
Status usable(int device) {
  static std::atomic<int> known_count{0};  // the devices a process sees do not change: asked once
  int count = known_count.load(std::memory_order_relaxed);
  if (count > 0 && device >= 0 && device < count) return Status::ok();
  const cudaError_t r = cudaGetDeviceCount(&count);
  if (r == cudaSuccess) known_count.store(count, std::memory_order_relaxed);
  if (r != cudaSuccess || count == 0) {
    return Status::invalid_argument("the tensor is on CUDA device " + std::to_string(device) +
                                    ", but this machine has no usable CUDA device (" +
                                    (r != cudaSuccess ? cuda_error_text(r, "cudaGetDeviceCount")
                                                      : std::string("cudaGetDeviceCount found none")) + ")");
  }
  if (device >= count) {
    return Status::invalid_argument("the tensor is on CUDA device " + std::to_string(device) +
                                    ", but this process sees " + std::to_string(count) + " CUDA device(s)");
  }
  return Status::ok();
}

class CudaDeviceMemory final : public DeviceMemory {
 public:
  StatusOr<std::shared_ptr<DeviceMark>> record(int device, void* stream) override {
    const Status s = usable(device);
    if (!s.is_ok()) return s;
    return record_on(device, static_cast<cudaStream_t>(stream));
  }

  Status wait(int device, const DeviceMark& mark) override {
    StatusOr<cudaStream_t> stream = staging_stream(device);
    if (!stream.is_ok()) return stream.status();
    return cuda_status(cudaStreamWaitEvent(stream.value(), static_cast<cudaEvent_t>(mark.native()), 0),
                       "cudaStreamWaitEvent(ready point)");
  }

  Status copy_to_host(int device, void* host, const void* device_ptr, int64_t bytes) override {
    return copy(device, host, device_ptr, bytes, cudaMemcpyDeviceToHost, "cudaMemcpyAsync(device to host)");
  }

  Status copy_to_device(int device, void* device_ptr, const void* host, int64_t bytes) override {
    return copy(device, device_ptr, host, bytes, cudaMemcpyHostToDevice, "cudaMemcpyAsync(host to device)");
  }

  StatusOr<std::shared_ptr<DeviceMark>> mark(int device) override {
    StatusOr<cudaStream_t> stream = staging_stream(device);
    if (!stream.is_ok()) return stream.status();
    return record_on(device, stream.value());
  }

  Status use_device(int device) override {
    if (t_own_device == device) return Status::ok();
    Status s = usable(device);
    if (s.is_ok()) s = cuda_status(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    if (s.is_ok()) t_own_device = device;
    return s;
  }

  // On Chorus's threads after use_device, so no context is made on GPU 0.
  StatusOr<std::shared_ptr<void>> allocate_pinned(int64_t bytes) override {
    void* p = nullptr;
    const Status s = cuda_status(cudaHostAlloc(&p, static_cast<size_t>(bytes > 0 ? bytes : 1), cudaHostAllocPortable),
                                 "cudaHostAlloc(" + std::to_string(bytes) + " bytes)");
    if (!s.is_ok()) return s;
    return std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
  }

 private:
  Status copy(int device, void* to, const void* from, int64_t bytes, cudaMemcpyKind kind, const char* call) {
    StatusOr<cudaStream_t> stream = staging_stream(device);
    if (!stream.is_ok()) return stream.status();
    return cuda_status(cudaMemcpyAsync(to, from, static_cast<size_t>(bytes), kind, stream.value()), call);
  }

  // The device's staging stream, made on first use.
  StatusOr<cudaStream_t> staging_stream(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(device);
    if (it == streams_.end()) {
      CurrentDeviceKept kept;
      DeviceStream made;
      const Status s = DeviceStream::create(device, &made);
      if (!s.is_ok()) return s;
      it = streams_.emplace(device, std::move(made)).first;
    }
    return it->second.get();
  }

  std::mutex mu_;
  std::map<int, DeviceStream> streams_;
};

}  // namespace

std::shared_ptr<DeviceMemory> make_cuda_device_memory() { return std::make_shared<CudaDeviceMemory>(); }

}  // namespace chorus::detail::gpu
