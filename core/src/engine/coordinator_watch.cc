#include "engine/coordinator_watch.h"

#include <algorithm>
#include <sstream>

namespace chorus::detail {

namespace {
constexpr size_t kNamesShown = 8;  // a backward pass waits for hundreds: name a few
}  // namespace

CoordinatorWatch::CoordinatorWatch(const RuntimeOptions& options, const Topology& topo, const Logger& logger,
                                   Clock::time_point start)
    : options_(options),
      topo_(topo),
      logger_(logger),
      schedule_(options.stall_check_seconds, options.stall_shutdown_seconds, start),
      last_heard_(start) {}

std::optional<std::string> CoordinatorWatch::check(const TensorQueue& queue, Clock::time_point now) {
  if (!schedule_.enabled()) return std::nullopt;
  const bool waiting = queue.in_flight() > 0;
  if (waiting && !waiting_) waiting_since_ = now;
  waiting_ = waiting;
  if (!waiting || !schedule_.due(now)) return std::nullopt;
  schedule_.begin_check(now);
  const Clock::time_point silent_since = std::max(last_heard_, waiting_since_);
  const StallSchedule::Verdict v = schedule_.look_at(silent_since);
  if (!v.report && !v.shutdown) return std::nullopt;
  const std::string what = silence_text(queue, silent_since, now);
  if (v.report) {
    CHORUS_LOG(logger_, kWarning) << "stall: " << what;
  }
  if (!v.shutdown) return std::nullopt;
  return stall_shutdown_reason(options_.stall_shutdown_seconds, what);
}

std::string CoordinatorWatch::silence_text(const TensorQueue& queue, Clock::time_point since,
                                           Clock::time_point now) const {
  const std::vector<std::string> names = queue.names_in_flight(kNamesShown);
  const size_t total = queue.in_flight();
  std::ostringstream out;
  out << "no word from the coordinator, rank " << topo_.scope.world_rank(0) << topo_.scope.in_text() << ", for "
      << static_cast<int64_t>(std::chrono::duration<double>(now - since).count()) << " s while rank "
      << topo_.scope.world_rank(topo_.rank) << " waits for tensors ";
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", '" : "'") << names[i] << "'";
  if (total > names.size()) out << " and " << total - names.size() << " more";
  out << " (is rank " << topo_.scope.world_rank(0) << " stopped or stuck?)";
  return out.str();
}

}  // namespace chorus::detail
