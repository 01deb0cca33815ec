#pragma once
// What the public Runtime does not offer but the library's own tests need:
// a Runtime over any backend (in-process ranks) and the internal counters.
// Only code linked against the internal target (chorus_core_internal) can
// call it; libchorus.so does not export it.

#include <memory>

#include "chorus/runtime.h"
#include "comm/backend.h"
#include "engine/device_support.h"
#include "engine/shared_stats.h"

namespace chorus::detail {

class RuntimeAccess {
 public:
  /// A runtime over `backend` (e.g. make_loopback_backend); throws
  /// chorus::Error as Runtime's constructor does.
  static std::unique_ptr<Runtime> make(std::unique_ptr<Backend> backend, RuntimeOptions options);
  /// The same with `device` as what CUDA tensors go through (a fake device
  /// memory, a test's device operations) instead of the build's.
  static std::unique_ptr<Runtime> make(std::unique_ptr<Backend> backend, RuntimeOptions options,
                                       std::shared_ptr<const DeviceSupport> device);
  /// The counters of every set's collectives together, with the route each
  /// data-plane allreduce took.
  static InternalStats stats(const Runtime& runtime);
};

/// Stops the process-wide runtime and starts a new one with the options of
/// the last init() (an elastic job's reset: chorus::elastic::reset).
void restart_process_runtime();

}  // namespace chorus::detail
