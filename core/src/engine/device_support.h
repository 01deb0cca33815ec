#pragma once
// The engine's port for tensors on a GPU: what the device layer (device/,
// device/cuda/) or a test provides: the device memory that records ready
// points and stages copies, the staged device operations, and the NCCL ones
// when they are built in. The api layer hands one DeviceSupport per Runtime
// to its engines (every process set's engine shares it; this build's comes
// from device/build_support.h); the engine makes its DeviceOperations on the
// first CUDA response (make_device_operations), on the background thread, at
// the same place of the response order on every rank.

#include <functional>
#include <memory>

#include "chorus/options.h"
#include "comm/backend.h"
#include "common/logging.h"
#include "common/status_or.h"
#include "engine/device_memory.h"
#include "engine/device_operations.h"
#include "engine/shared_stats.h"
#include "timeline/timeline.h"

namespace chorus::detail {

/// What a DeviceOperations is made from: the engine's backend (the staged
/// path splits its own from it; NCCL exchanges its id over it), on the
/// engine's background thread. The stats and the timeline outlive the
/// operations; their threads record into both (device/device_timeline.h).
struct DeviceOperationsContext {
  Backend& backend;
  const RuntimeOptions& options;
  const Logger& logger;
  SharedStats& stats;
  std::shared_ptr<DeviceMemory> memory;
  Timeline& timeline;
};

using DeviceOperationsFactory =
    std::function<StatusOr<std::unique_ptr<DeviceOperations>>(const DeviceOperationsContext& context)>;

struct DeviceSupport {
  /// nullptr: this build has no GPU support; a CUDA tensor is refused at
  /// enqueue.
  std::shared_ptr<DeviceMemory> memory;
  /// The staged device operations (device/staged_device_operations.h);
  /// empty: CUDA responses fail with a message saying so.
  DeviceOperationsFactory make_staged;
  /// The NCCL device operations; empty when not built in. Returns an error
  /// when NCCL does not load in this process.
  DeviceOperationsFactory make_nccl;
  /// Whether make_nccl can work here (NCCL loads); cheap after the first call.
  std::function<bool()> nccl_loads;
};

/// CHORUS_GPU_OPERATIONS resolved and made. `auto`: NCCL when it loads on
/// every rank of the backend (one small allgather, so all ranks choose the
/// same), else staged; `nccl`: an error naming the ranks where it does not
/// load. The same result on every rank.
StatusOr<std::unique_ptr<DeviceOperations>> make_device_operations(const DeviceSupport& support,
                                                                   const DeviceOperationsContext& context);

}  // namespace chorus::detail
