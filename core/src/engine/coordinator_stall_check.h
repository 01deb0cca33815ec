#pragma once
// Rank 0's stall check: tensors some ranks submitted and others have not.
// Each is reported when its wait reaches N, 2N, ... seconds
// (negotiation/stall_schedule.h), naming the ranks that submitted it and the
// ranks it waits for; once a wait reaches the stall shutdown time, check()
// returns the shutdown reason. While tensors wait, rank 0 also makes sure
// the workers hear from it every N/2 (an empty response list, if nothing
// else went out), so that their watch (engine/coordinator_watch.h) can tell
// a silent coordinator from a slow rank.

#include <chrono>
#include <optional>
#include <string>

#include "chorus/options.h"
#include "comm/backend.h"
#include "common/logging.h"
#include "negotiation/cached_readiness.h"
#include "negotiation/coordinator.h"
#include "negotiation/response_cache.h"
#include "negotiation/stall_schedule.h"

namespace chorus::detail {

class CoordinatorStallCheck {
 public:
  using Clock = std::chrono::steady_clock;
  CoordinatorStallCheck(const RuntimeOptions& options, const Topology& topo, const Logger& logger,
                        Clock::time_point start);

  /// Warns about the waits that reached a multiple of N since the last
  /// check (when one is due); returns the stall shutdown reason once a wait
  /// reached the shutdown time, else nothing.
  std::optional<std::string> check(const Coordinator& coordinator, const CachedReadiness& readiness,
                                   const ResponseCache& cache, Clock::time_point now);
  /// Whether to send the workers an empty response list now: tensors wait
  /// (`waiting`) and nothing went to the workers for N/2.
  bool heartbeat_due(bool waiting, Clock::time_point now) const;
  /// Something went to the workers at `now`.
  void sent(Clock::time_point now) { last_sent_ = now; }

 private:
  std::vector<StalledTensor> waits(const Coordinator& coordinator, const CachedReadiness& readiness,
                                   const ResponseCache& cache, Clock::time_point now) const;

  const RuntimeOptions& options_;
  const Topology topo_;
  const Logger& logger_;
  StallSchedule schedule_;
  const Clock::duration heartbeat_every_;
  Clock::time_point last_sent_;
};

}  // namespace chorus::detail
