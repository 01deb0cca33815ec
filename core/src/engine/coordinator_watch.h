#pragma once
// A worker's watch on the coordinator (rank 0 of its set): the stall check
// runs on rank 0, so a stopped or stuck rank 0 would otherwise go unreported.
// While this rank waits for responses, a live rank 0 sends something at
// least every N/2 (engine/coordinator_stall_check.h); when it has been
// silent for N, 2N, ... seconds (CHORUS_STALL_CHECK_TIME_SECONDS) this rank
// warns, naming rank 0 and the tensors it waits for, and once silent for
// CHORUS_STALL_SHUTDOWN_TIME_SECONDS (when set) check() returns the stall
// shutdown reason: nobody else could shut the job down.

#include <chrono>
#include <optional>
#include <string>

#include "chorus/options.h"
#include "comm/backend.h"
#include "common/logging.h"
#include "negotiation/stall_schedule.h"
#include "engine/tensor_queue.h"

namespace chorus::detail {

class CoordinatorWatch {
 public:
  using Clock = std::chrono::steady_clock;
  CoordinatorWatch(const RuntimeOptions& options, const Topology& topo, const Logger& logger,
                   Clock::time_point start);

  /// A message from the coordinator arrived, or this rank finished running one.
  void heard(Clock::time_point now) { last_heard_ = now; }
  /// Warns when due (see above) about the tensors in flight in `queue`;
  /// returns the stall shutdown reason once that is due, else nothing.
  std::optional<std::string> check(const TensorQueue& queue, Clock::time_point now);

 private:
  std::string silence_text(const TensorQueue& queue, Clock::time_point since, Clock::time_point now) const;

  const RuntimeOptions& options_;
  const Topology topo_;
  const Logger& logger_;
  StallSchedule schedule_;
  Clock::time_point last_heard_;
  bool waiting_ = false;
  Clock::time_point waiting_since_;
};

}  // namespace chorus::detail
