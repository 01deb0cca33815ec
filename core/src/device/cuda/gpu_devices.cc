#include "device/cuda/gpu_devices.h"

#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>

#include "device/cuda/gpu_errors.h"
#include "device/cuda/nccl_wait.h"

namespace chorus::detail::gpu {

Status GpuDevice::ensure_fusion(int64_t bytes) {
  if (bytes <= fusion_bytes) return Status::ok();
  cudaStream_t s = stream.get();
  if (fusion != nullptr) {
    Status freed = cuda_status(cudaFreeAsync(fusion, s), "cudaFreeAsync(fusion buffer)");
    fusion = nullptr;
    fusion_bytes = 0;
    if (!freed.is_ok()) return freed;
  }
  const int64_t grown = bytes + bytes / 4;  // some headroom: fewer regrowths as batches vary
  Status made = cuda_status(cudaMallocAsync(&fusion, static_cast<size_t>(grown), s),
                            "cudaMallocAsync(fusion buffer, " + std::to_string(grown) + " bytes, GPU " +
                                std::to_string(device) + ")");
  if (!made.is_ok()) return made;
  fusion_bytes = grown;
  return Status::ok();
}

// Frees the fusion buffer once the stream's work has ended, waiting at most
// 10 s: a stream stuck behind a producer that never finishes keeps it
// (leaked) rather than hang the shutdown.
// It may run on any thread (the last owner of GpuDevices): the device is set
// first, so neither this nor the stream's destruction makes a context on GPU 0.
GpuDevice::~GpuDevice() {
  if (device < 0 || cudaSetDevice(device) != cudaSuccess) return;  // the fusion buffer is leaked then
  if (fusion == nullptr) return;
  cudaError_t r = cudaErrorNotReady;
  wait_until_done([&] { return (r = cudaStreamQuery(stream.get())) != cudaErrorNotReady; }, std::chrono::seconds(10));
  if (r == cudaSuccess) cudaFree(fusion);
}

Status GpuDevices::get(int device, GpuDevice** out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    auto d = std::make_unique<GpuDevice>();
    d->device = device;
    Status s = DeviceStream::create(device, &d->stream);
    if (!s.is_ok()) return s;
    it = devices_.emplace(device, std::move(d)).first;
  }
  *out = it->second.get();
  return Status::ok();
}

}  // namespace chorus::detail::gpu
