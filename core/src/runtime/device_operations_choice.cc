// CHORUS_GPU_OPERATIONS: which DeviceOperations a job runs its CUDA
// responses through, the same on every rank (every rank must issue the same
// device work in the same order).
#include <cstdint>
#include <vector>

#include "common/rank_text.h"
#include "runtime/device_support.h"
#include "runtime/staged_device_operations.h"

namespace chorus::detail {

namespace {

// Every rank's "NCCL loads here", in rank order.
StatusOr<std::vector<uint8_t>> nccl_everywhere(const DeviceSupport& support, Backend& backend) {
  const int size = backend.topology().size;
  const uint8_t mine = support.make_nccl && support.nccl_loads && support.nccl_loads() ? 1 : 0;
  std::vector<uint8_t> all(static_cast<size_t>(size));
  const Status s = backend.collectives().allgatherv(&mine, all.data(), std::vector<int64_t>(size, 1), 1);
  if (!s.is_ok()) return Status(s.code(), "agreeing on CHORUS_GPU_OPERATIONS: " + s.message());
  return all;
}

}  // namespace

StatusOr<std::unique_ptr<DeviceOperations>> make_device_operations(const DeviceSupport& support,
                                                                   const DeviceOperationsContext& context) {
  if (!support.memory) {
    return Status::precondition_error("a CUDA tensor reached a build of Chorus without GPU support");
  }
  const GpuOperations wanted = context.options.gpu_operations;
  if (wanted == GpuOperations::kStaged) return make_staged_device_operations(context);
  StatusOr<std::vector<uint8_t>> loads = nccl_everywhere(support, context.backend);
  if (!loads.is_ok()) return loads.status();
  std::vector<int> without;
  for (size_t r = 0; r < loads.value().size(); ++r) {
    if (!loads.value()[r]) without.push_back(context.backend.topology().scope.world_rank(static_cast<int>(r)));
  }
  if (without.empty()) return support.make_nccl(context);
  if (wanted == GpuOperations::kAuto) return make_staged_device_operations(context);
  return Status::precondition_error("CHORUS_GPU_OPERATIONS=nccl, but the NCCL device operations are not "
                                     "available on " + rank_list(without) +
                                     " (not built in, or libnccl.so.2 does not load); set it to staged");
}

}  // namespace chorus::detail
