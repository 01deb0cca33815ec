#pragma once
// The NCCL device operations (DeviceOperations on NCCL), as the runtime makes
// them: no CUDA or NCCL type here, so the runtime includes it as it is.
//
// Wiring (the runtime side): one GpuDevices per process, shared by the
// global set's and every process set's operations; each engine makes its
// own operations on its first device response, on its background thread,
// at the same place of the response order on every rank (the NCCL
// communicator is created there, collectively). For instance:
//
//   support.make_nccl = [devices = make_gpu_devices()](const DeviceOperationsContext& c)
//       -> StatusOr<std::unique_ptr<DeviceOperations>> {
//     Status s = nccl_available();
//     if (!s.is_ok()) return s;
//     NcclOperationsSettings settings;
//     settings.op_timeout_seconds = c.options.gpu_op_timeout_seconds;
//     settings.ready_event = [](const TensorEntry& e) { return e.ready ? e.ready->native() : nullptr; };
//     return make_nccl_device_operations(c.backend, std::move(settings), devices);
//   };

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "comm/backend.h"
#include "engine/device_operations.h"
#include "engine/tensor_entry.h"

namespace chorus::detail::gpu {

class GpuDevices;
/// The per-device stream, launch lock, fusion buffer and communicator claims
/// every set's operations share.
std::shared_ptr<GpuDevices> make_gpu_devices();

struct NcclOperationsSettings {
  /// RuntimeOptions::gpu_op_timeout_seconds (CHORUS_GPU_OP_TIMEOUT_SECONDS):
  /// a batch not finished after this long faults the runtime; 0: no limit.
  double op_timeout_seconds = 600.0;
  /// RuntimeOptions::hierarchical_allreduce: allreduces run on the host's
  /// and the across-hosts communicators (device/cuda/set_communicators.h) where the
  /// hosts hold equal numbers of the set's ranks.
  bool hierarchical_allreduce = false;
  /// The entry's ready point on its producer's stream, as a cudaEvent_t
  /// (recorded at enqueue; the runtime's TensorEntry::ready->native()), or
  /// nullptr. Without one, the launch stream waits for everything queued so
  /// far on the legacy default stream.
  std::function<void*(const TensorEntry&)> ready_event;
  /// An out-of-place output's own ready point (TensorEntry::output_ready,
  /// recorded at enqueue when its stream differs from the input's), or
  /// nullptr; the launch stream waits on it before writing the output.
  std::function<void*(const TensorEntry&)> output_ready_event;
  /// Runs on the completion thread once a response's device work finished
  /// or failed (statistics: the runtime's SharedStats); may be empty.
  std::function<void(ResponseType type, size_t tensors, int64_t bytes, const Status& status)> on_finish;
  /// On the background thread as a response's device work is handed to the
  /// completion thread: what that thread runs (before on_finish) once the
  /// work finished or failed, given when the launch began (the runtime's
  /// timeline: device/device_timeline.h's device_span). May be empty, and
  /// may return an empty function (timeline off).
  std::function<std::function<void(const Status&)>(ResponseType type, const std::vector<TensorEntry>& entries,
                                                   std::chrono::steady_clock::time_point launched)>
      trace;
};

/// NCCL's device operations for `backend`'s ranks (its topology's scope is
/// the process set). Nothing collective happens here: the communicator is
/// made on the first execute().
std::unique_ptr<DeviceOperations> make_nccl_device_operations(Backend& backend, NcclOperationsSettings settings,
                                                               std::shared_ptr<GpuDevices> devices);

/// Whether NCCL loads in this process (version checked); the reason when not.
Status nccl_available();

}  // namespace chorus::detail::gpu
