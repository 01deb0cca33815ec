#pragma once
// The GPU side of the data plane as the engine sees it: runs one Response
// whose tensors live on a CUDA device. No CUDA or NCCL type appears here, so
// the engine compiles without the toolkit. Implementations: NCCL (the
// default, device/cuda/nccl_device_operations.h) and staged through pinned
// host memory and the CPU data plane (device/staged_device_operations.h,
// CHORUS_GPU_OPERATIONS=staged). Which one runs is a job-wide agreed setting
// (engine/device_operations_choice.cc), so every rank issues the same device
// work.

#include <cstddef>
#include <vector>

#include "chorus/status.h"
#include "negotiation/messages.h"
#include "engine/tensor_entry.h"

namespace chorus::detail {

class DeviceOperations {
 public:
  virtual ~DeviceOperations() = default;

  /// On the background thread, and must return without waiting for the
  /// device: makes the device's stream wait on each input's ready point,
  /// enqueues the work, and hands the batch to a completion thread that
  /// completes each entry (its handle, group, callback) once the work has
  /// finished on the device, or fails them with the error naming the
  /// tensors. The entries (and so their tensors) stay referenced until then.
  virtual void execute(const Response& response, std::vector<TensorEntry> entries) = 0;

  /// The first asynchronous fault seen (an NCCL error, an operation past
  /// CHORUS_GPU_OP_TIMEOUT_SECONDS), or OK. The background loop checks it
  /// every cycle and shuts the runtime down with it on every rank.
  virtual Status fault() const = 0;

  /// Fails everything still pending with `why`, aborts the communicators,
  /// and returns once nothing of this rank's is left running on the device.
  virtual void abort(const Status& why) = 0;

  /// Responses handed to the device and not yet completed or failed (may
  /// lag a completion slightly). The background loop keeps its short spin
  /// while there are any and starts it over when they end, since the
  /// caller waiting for them usually enqueues again at once. 0 where the
  /// implementation does not say.
  virtual size_t in_flight() const { return 0; }
};

}  // namespace chorus::detail
