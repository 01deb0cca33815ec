// A build with CUDA: device memory through the CUDA runtime, and the NCCL
// device operations (CHORUS_GPU_OPERATIONS=auto|nccl picks them where NCCL
// loads on every rank: engine/device_operations_choice.cc).
#include "device/build_support.h"

#include "device/cuda/cuda_device_memory.h"
#include "device/cuda/nccl_device_operations.h"
#include "device/cuda/nccl_symbols.h"
#include "device/device_timeline.h"
#include "device/staged_device_operations.h"

namespace chorus::detail {

bool built_with_cuda() { return true; }
int built_nccl_version() { return NCCL_VERSION_CODE; }

DeviceSupport build_device_support() {
  DeviceSupport support;
  support.memory = gpu::make_cuda_device_memory();
  support.make_staged = make_staged_device_operations;
  support.nccl_loads = [] {
    static const bool loads = gpu::nccl_available().is_ok();
    return loads;
  };
  // One GpuDevices per Runtime: every process set's operations share each
  // device's launch stream, launch lock, fusion buffer and communicator claim.
  support.make_nccl = [devices = gpu::make_gpu_devices()](const DeviceOperationsContext& context)
      -> StatusOr<std::unique_ptr<DeviceOperations>> {
    Status available = gpu::nccl_available();
    if (!available.is_ok()) return available;
    gpu::NcclOperationsSettings settings;
    settings.op_timeout_seconds = context.options.gpu_op_timeout_seconds;
    settings.hierarchical_allreduce = context.options.hierarchical_allreduce;
    settings.ready_event = [](const TensorEntry& entry) { return entry.ready ? entry.ready->native() : nullptr; };
    settings.output_ready_event = [](const TensorEntry& entry) {
      return entry.output_ready ? entry.output_ready->native() : nullptr;
    };
    // The engine's stats outlive its device operations (their completion
    // thread is joined when the engine's background thread ends).
    settings.on_finish = [&stats = context.stats](ResponseType type, size_t tensors, int64_t bytes,
                                                  const Status& status) {
      record_device_response(stats, type, tensors, bytes, status);
    };
    // So is the timeline: each tensor's row gets NCCL_<COLLECTIVE> from the
    // launch until the completion thread sees the work end.
    settings.trace = [&timeline = context.timeline](ResponseType type, const std::vector<TensorEntry>& entries,
                                                     std::chrono::steady_clock::time_point launched) {
      return device_span(timeline, device_activity("NCCL_", type), entries, launched);
    };
    return gpu::make_nccl_device_operations(context.backend, std::move(settings), devices);
  };
  return support;
}

}  // namespace chorus::detail
