// A build with CUDA: device memory through the CUDA runtime. The NCCL device
// operations join here (make_nccl, nccl_loads) when they are built; until
// then CHORUS_GPU_OPERATIONS=auto chooses staged and =nccl is an error
// naming every rank (runtime/device_operations_choice.cc).
#include "runtime/device_support.h"

#include "gpu/cuda_device_memory.h"

namespace chorus::detail {

DeviceSupport build_device_support() {
  DeviceSupport support;
  support.memory = gpu::make_cuda_device_memory();
  support.nccl_loads = [] { return false; };
  return support;
}

}  // namespace chorus::detail
