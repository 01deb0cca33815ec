// A build without CUDA (CHORUS_WITH_CUDA=OFF or no toolkit found): no device
// memory, so a CUDA tensor is refused at enqueue with a message naming it.
#include "device/build_support.h"

namespace chorus::detail {

DeviceSupport build_device_support() { return {}; }
bool built_with_cuda() { return false; }
int built_nccl_version() { return 0; }

}  // namespace chorus::detail
