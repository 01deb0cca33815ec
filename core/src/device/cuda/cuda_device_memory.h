#pragma once
// DeviceMemory (engine/device_memory.h) on CUDA: ready points as events
// recorded on the producer's stream, and the staged path's copies on one
// private stream per device (device_stream.h: non-blocking, highest
// priority). The calling thread's current device is left as it was.

#include <memory>

#include "engine/device_memory.h"

namespace chorus::detail::gpu {

std::shared_ptr<DeviceMemory> make_cuda_device_memory();

}  // namespace chorus::detail::gpu
