#include "negotiation/stall_schedule.h"

#include <algorithm>
#include <sstream>

namespace chorus::detail {

namespace {

constexpr char kStallShutdownPrefix[] = "stall shutdown after ";

}  // namespace

// Capped at about 30 years so that the conversion cannot overflow (the
// knobs' ranges are checked at init()).
StallSchedule::Clock::duration stall_duration(double seconds) {
  if (!(seconds > 0)) return StallSchedule::Clock::duration::zero();
  const double capped = std::min(seconds, 1e9);
  return std::chrono::duration_cast<StallSchedule::Clock::duration>(std::chrono::duration<double>(capped));
}

StallSchedule::StallSchedule(double warn_seconds, double shutdown_seconds, Clock::time_point start)
    : warn_(stall_duration(warn_seconds)),
      shutdown_(stall_duration(shutdown_seconds)),
      previous_(start),
      now_(start),
      next_(start + warn_) {}

void StallSchedule::begin_check(Clock::time_point now) {
  previous_ = now_;
  now_ = now;
  next_ = now + warn_;  // a wait that begins after now reaches N no sooner
}

// How many times N fit into the wait that began at `since`, at `at`.
int64_t StallSchedule::milestones(Clock::time_point since, Clock::time_point at) const {
  if (at <= since) return 0;
  return (at - since) / warn_;
}

StallSchedule::Verdict StallSchedule::look_at(Clock::time_point since) {
  Verdict v;
  const int64_t reached = milestones(since, now_);
  v.report = reached >= 1 && reached > milestones(since, previous_);
  v.shutdown = shutdown_.count() > 0 && now_ - since >= shutdown_;
  next_ = std::min(next_, since + (reached + 1) * warn_);
  if (shutdown_.count() > 0 && !v.shutdown) next_ = std::min(next_, since + shutdown_);
  return v;
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds << " s";
  return out.str();
}

std::string stall_shutdown_reason(double shutdown_seconds, const std::string& what) {
  return kStallShutdownPrefix + seconds_text(shutdown_seconds) + ": " + what;
}

bool is_stall_shutdown(const std::string& reason) { return reason.rfind(kStallShutdownPrefix, 0) == 0; }

}  // namespace chorus::detail
