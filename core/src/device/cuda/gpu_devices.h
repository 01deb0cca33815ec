#pragma once
// What one process shares between the GPU data planes of all its process
// sets, per device: the one stream every launch goes to, the lock that makes
// it the one launch point (NCCL is not safe with two threads issuing to
// communicators of one device), and the persistent fusion buffer (one is
// enough: every launch is ordered on the stream). Plus the claims that keep
// one communicator per GPU (device/cuda/launch_order.h).

#include <map>
#include <memory>
#include <mutex>

#include "chorus/status.h"
#include "device/cuda/device_stream.h"
#include "device/cuda/launch_order.h"

namespace chorus::detail::gpu {

struct GpuDevice {
  int device = -1;
  DeviceStream stream;
  /// Held while a response's work is queued on `stream`.
  std::mutex launch_mu;
  /// The device fusion buffer; grown (stream-ordered) by ensure_fusion.
  void* fusion = nullptr;
  int64_t fusion_bytes = 0;

  /// With launch_mu held: at least `bytes` of fusion buffer. The old one is
  /// freed and the new one allocated in stream order (cudaFreeAsync /
  /// cudaMallocAsync), so work queued before still finds its buffer.
  Status ensure_fusion(int64_t bytes);
  ~GpuDevice();
};

class GpuDevices {
 public:
  /// The device's shared state, made on first use (its stream created).
  Status get(int device, GpuDevice** out);
  CommunicatorClaims& claims() { return claims_; }

 private:
  std::mutex mu_;
  std::map<int, std::unique_ptr<GpuDevice>> devices_;
  CommunicatorClaims claims_;
};

}  // namespace chorus::detail::gpu
