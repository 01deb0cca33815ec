// CHORUS_GPU_OPERATIONS: which DeviceOperations a job runs its CUDA
// responses through, the same on every rank (every rank must issue the same
// device work in the same order).
#include <vector>

#include "common/rank_text.h"
#include "engine/device_support.h"
#include "engine/rank_flags.h"

namespace chorus::detail {

static StatusOr<std::unique_ptr<DeviceOperations>> staged(const DeviceSupport& support,
                                                          const DeviceOperationsContext& context) {
  if (!support.make_staged) {
    return Status::precondition_error("a CUDA tensor reached a device support without the staged device operations");
  }
  return support.make_staged(context);
}

StatusOr<std::unique_ptr<DeviceOperations>> make_device_operations(const DeviceSupport& support,
                                                                   const DeviceOperationsContext& context) {
  if (!support.memory) {
    return Status::precondition_error("a CUDA tensor reached a build of Chorus without GPU support");
  }
  const GpuOperations wanted = context.options.gpu_operations;
  if (wanted == GpuOperations::kStaged) return staged(support, context);
  const Topology topo = context.backend.topology();
  const bool loads = support.make_nccl && support.nccl_loads && support.nccl_loads();
  const StatusOr<std::vector<int>> without_nccl =
      ranks_saying_no(context.backend.collectives(), topo.size, topo.scope, loads);
  if (!without_nccl.is_ok())
    return Status(without_nccl.status().code(), "agreeing on CHORUS_GPU_OPERATIONS: " + without_nccl.status().message());
  const std::vector<int>& without = without_nccl.value();
  if (without.empty()) return support.make_nccl(context);
  if (wanted == GpuOperations::kAuto) return staged(support, context);
  return Status::precondition_error("CHORUS_GPU_OPERATIONS=nccl, but the NCCL device operations are not "
                                     "available on " + rank_list(without) +
                                     " (not built in, or libnccl.so.2 does not load); set it to staged");
}

}  // namespace chorus::detail
