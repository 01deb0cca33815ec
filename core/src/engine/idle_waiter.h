#pragma once
// How the background thread waits when a round did nothing: busy-poll
// (yielding the core to any runnable thread) for a spin window after the last
// event, then sleep in growing steps up to the cycle time. The window is long
// while operations are in flight, since an answer from the other ranks is due
// and a sleeping thread would notice it only when the sleep ends; it is short
// when the rank is idle. An enqueue wakes a sleep at once. This keeps a small
// allreduce fast and an idle rank's thread near 0% of a core, unlike waiting
// inside a blocking MPI call, which spins a whole core.

#include <chrono>

#include "chorus/options.h"
#include "engine/tensor_queue.h"

namespace chorus::detail {

class IdleWaiter {
 public:
  using Clock = std::chrono::steady_clock;
  IdleWaiter(const RuntimeOptions& options, TensorQueue& queue);
  /// Something happened: the next waits spin again.
  void on_progress();
  /// Waits a little, as described above; `pending`: operations are in flight.
  void wait(bool pending);
  /// The autotuner's cycle time (every rank applies the coordinator's choice).
  void set_cycle_time_ms(double ms);

 private:
  TensorQueue& queue_;
  const std::chrono::nanoseconds spin_;
  const std::chrono::nanoseconds pending_spin_;
  std::chrono::nanoseconds max_sleep_;
  const bool wake_on_enqueue_;
  Clock::time_point last_progress_;
  std::chrono::nanoseconds next_sleep_;
};

}  // namespace chorus::detail
