#pragma once
// What this build provides for tensors on a GPU, as the engine's port
// (engine/device_support.h) wants it: CUDA's (device/cuda/device_support.cc)
// or none (device/no_device_support.cc, builds without CUDA). The api layer
// calls it once per Runtime.

#include "engine/device_support.h"

namespace chorus::detail {

/// This build's device support.
DeviceSupport build_device_support();
/// Whether this build has the GPU path, and the NCCL_VERSION_CODE it was
/// compiled against (0: none); nothing is loaded or initialized to answer.
bool built_with_cuda();
int built_nccl_version();

}  // namespace chorus::detail
