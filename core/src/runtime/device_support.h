#pragma once
// What this build (or a test) provides for tensors on a GPU: the device
// memory that records ready points and stages copies, and the NCCL device
// operations when they are built in. The runtime holds one DeviceSupport per
// Runtime (every process set's engine shares it) and makes its
// DeviceOperations on the first CUDA response (make_device_operations), on
// the background thread, at the same place of the response order on every
// rank.

#include <functional>
#include <memory>

#include "chorus/options.h"
#include "comm/backend.h"
#include "common/logging.h"
#include "common/status_or.h"
#include "runtime/device_memory.h"
#include "runtime/device_operations.h"
#include "runtime/shared_stats.h"
#include "timeline/timeline.h"

namespace chorus::detail {

/// What a DeviceOperations is made from: the engine's backend (the staged
/// path splits its own from it; NCCL exchanges its id over it), on the
/// engine's background thread. The stats and the timeline outlive the
/// operations; their threads record into both (runtime/device_timeline.h).
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
  /// The NCCL device operations; empty when not built in. Returns an error
  /// when NCCL does not load in this process.
  DeviceOperationsFactory make_nccl;
  /// Whether make_nccl can work here (NCCL loads); cheap after the first call.
  std::function<bool()> nccl_loads;
};

/// This build's: CUDA's (core/src/gpu/device_support.cc) or none
/// (runtime/no_device_support.cc, builds without CUDA).
DeviceSupport build_device_support();
/// Whether this build has the GPU path, and the NCCL_VERSION_CODE it was
/// compiled against (0: none); nothing is loaded or initialized to answer.
bool built_with_cuda();
int built_nccl_version();

/// CHORUS_GPU_OPERATIONS resolved and made. `auto`: NCCL when it loads on
/// every rank of the backend (one small allgather, so all ranks choose the
/// same), else staged; `nccl`: an error naming the ranks where it does not
/// load. The same result on every rank.
StatusOr<std::unique_ptr<DeviceOperations>> make_device_operations(const DeviceSupport& support,
                                                                   const DeviceOperationsContext& context);

}  // namespace chorus::detail
