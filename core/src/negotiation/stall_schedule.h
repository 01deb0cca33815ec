#pragma once
// When to look for stalls, and which waits to report. A wait is reported
// when it reaches N, 2N, 3N, ... (N: CHORUS_STALL_CHECK_TIME_SECONDS), and
// the stall shutdown is due when it reaches S
// (CHORUS_STALL_SHUTDOWN_TIME_SECONDS). Checks are scheduled for the next of
// those moments among the waits seen, not on a fixed period, so the first
// warning comes at N rather than anywhere up to 2N. Pure logic on time
// points the caller passes in: unit-tested with a made-up clock.

#include <chrono>
#include <string>

namespace chorus::detail {

class StallSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  /// `warn_seconds` <= 0 disables the schedule; `shutdown_seconds` <= 0: no shutdown.
  StallSchedule(double warn_seconds, double shutdown_seconds, Clock::time_point start);

  bool enabled() const { return warn_.count() > 0; }
  /// A check is due: some wait seen at the last check reaches a milestone,
  /// or N has passed since (waits that began after it reach N no sooner).
  bool due(Clock::time_point now) const { return enabled() && now >= next_; }
  /// When the next check is due.
  Clock::time_point next_check() const { return next_; }

  /// Starts a check at `now`; then look_at() every wait.
  void begin_check(Clock::time_point now);
  struct Verdict {
    bool report = false;    ///< the wait reached N, 2N, ... since the previous check
    bool shutdown = false;  ///< the wait has reached S
  };
  /// One wait that began at `since`; plans the next check for its next milestone.
  Verdict look_at(Clock::time_point since);

 private:
  int64_t milestones(Clock::time_point since, Clock::time_point at) const;

  Clock::duration warn_, shutdown_;
  Clock::time_point previous_, now_, next_;
};

/// Seconds as a clock duration; 0 for anything not above 0.
StallSchedule::Clock::duration stall_duration(double seconds);
/// Formats a duration in seconds for messages: "2 s", "0.5 s".
std::string seconds_text(double seconds);
/// The reason a stall shutdown gives: "stall shutdown after S s: <what>".
std::string stall_shutdown_reason(double shutdown_seconds, const std::string& what);
/// Whether a shutdown reason is a stall shutdown's (made by the function above).
bool is_stall_shutdown(const std::string& reason);

}  // namespace chorus::detail
