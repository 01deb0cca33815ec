#pragma once
// How NCCL launches on several communicators stay in the same order on every
// rank. Chorus runs each process set on its own background thread, and
// nothing orders two sets' responses against each other; two ranks that
// launched kernels of two communicators in opposite orders on one stream
// would each wait on the other forever. The rule kept here: each GPU serves
// ONE communicator for the life of the process (the global set's, or one
// process set's), claimed by the first device collective on it. A second
// communicator's operation on that GPU is refused with a message saying so
// (its peers then fail at CHORUS_GPU_OP_TIMEOUT_SECONDS, never a silent hang).
// Data parallelism over the global set and model-parallel groups over
// disjoint process sets both fit; a job mixing the two on one GPU needs
// launch tickets from the global coordinator (docs/architecture.md, "GPU").
// CUDA-free, so the rule is unit-tested (test/gpu/test_launch_order.cc).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "chorus/status.h"

namespace chorus::detail::gpu {

class CommunicatorClaims {
 public:
  /// OK when `device` is unclaimed (it becomes `set_id`'s) or already
  /// `set_id`'s; otherwise a precondition error naming the tensor, both sets
  /// and the device. Thread-safe: every set's thread calls it.
  Status claim(int device, int32_t set_id, const std::string& tensor);
  /// The set that owns `device`, or -1.
  int32_t owner(int device) const;

 private:
  mutable std::mutex mu_;
  std::map<int, int32_t> owners_;
};

/// "the global process set" or "process set 3".
std::string set_text(int32_t set_id);

}  // namespace chorus::detail::gpu
