#pragma once
// Waiting for a non-blocking NCCL communicator. Chorus creates its
// communicators with `blocking = 0`, so no NCCL call can hold the background
// thread while peers are missing (NCCL >= 2.22 connects lazily, inside the
// first collective or ncclGroupEnd, and a blocking call waits there for
// peers forever). A call that returns ncclInProgress is waited for here by
// polling the communicator's state (ncclCommGetAsyncError) until it leaves
// "in progress", under the operation's deadline (CHORUS_GPU_OP_TIMEOUT_SECONDS).
// No CUDA or NCCL type: the poll is a callable, so this is unit-tested with
// fakes (test/gpu/test_nccl_wait.cc).

#include <chrono>
#include <functional>
#include <string>

#include "chorus/status.h"

namespace chorus::detail::gpu {

/// When an operation must have finished, and the setting it came from.
struct OpDeadline {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::time_point::max();
  double seconds = 0;  ///< for the message; 0: no deadline
  /// `seconds` from now; zero or less: none.
  static OpDeadline after(double seconds);
};

using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;

/// Polls `poll` (OK: done, in_progress: still running, else the error)
/// until it is no longer in progress, yielding then sleeping (1 us doubling
/// to 1 ms) in between. Returns OK; the error prefixed with `what`; or a
/// timeout naming `what` and CHORUS_GPU_OP_TIMEOUT_SECONDS once `now()` passes
/// the deadline. The caller aborts the communicator on any error.
Status wait_in_progress(const std::function<Status()>& poll, const OpDeadline& deadline, const std::string& what,
                        const SteadyNow& now = [] { return std::chrono::steady_clock::now(); });

/// Sleeps in 1 ms steps until `done()` or `limit` has passed (by the clock,
/// so a loaded machine does not stretch it); returns done().
bool wait_until_done(const std::function<bool()>& done, std::chrono::milliseconds limit);

}  // namespace chorus::detail::gpu
