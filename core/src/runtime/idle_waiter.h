#pragma once
// How the background thread waits when a round did nothing: busy-poll for
// a short spin window after the last event (an answer usually comes within
// microseconds when every rank is active), then sleep in growing steps up to
// the cycle time. An enqueue wakes the sleep at once. This keeps a small
// allreduce fast and an idle rank's thread near 0% of a core, unlike waiting
// inside a blocking MPI call, which spins a whole core.

#include <chrono>

#include "chorus/options.h"
#include "runtime/tensor_queue.h"

namespace chorus::detail {

class IdleWaiter {
 public:
  using Clock = std::chrono::steady_clock;
  IdleWaiter(const RuntimeOptions& options, TensorQueue& queue);
  /// Something happened: the next waits spin again.
  void on_progress();
  /// Waits a little, as described above.
  void wait();

 private:
  TensorQueue& queue_;
  const std::chrono::nanoseconds spin_;
  const std::chrono::nanoseconds max_sleep_;
  const bool wake_on_enqueue_;
  Clock::time_point last_progress_;
  std::chrono::nanoseconds next_sleep_;
};

}  // namespace chorus::detail
