#include "engine/coordinator_stall_check.h"

#include <algorithm>
#include <sstream>

#include "common/rank_text.h"

namespace chorus::detail {

CoordinatorStallCheck::CoordinatorStallCheck(const RuntimeOptions& options, const Topology& topo, const Logger& logger,
                                             Clock::time_point start)
    : options_(options),
      topo_(topo),
      logger_(logger),
      schedule_(options.stall_check_seconds, options.stall_shutdown_seconds, start),
      heartbeat_every_(stall_duration(options.stall_check_seconds) / 2),
      last_sent_(start) {}

// Every tensor that waits for some rank, by full request or by cache bits.
std::vector<StalledTensor> CoordinatorStallCheck::waits(const Coordinator& coordinator,
                                                        const CachedReadiness& readiness, const ResponseCache& cache,
                                                        Clock::time_point now) const {
  std::vector<StalledTensor> out = coordinator.stalled(now, 0);
  for (const CachedReadiness::Stalled& c : readiness.stalled(now, 0)) {
    StalledTensor t;
    t.name = cache.at(c.slot)->name;
    t.waiting_seconds = c.waiting_seconds;
    t.first_seen = c.first_seen;
    for (int r = 0; r < topo_.size; ++r) {
      const bool marked = std::find(c.marked_ranks.begin(), c.marked_ranks.end(), r) != c.marked_ranks.end();
      (marked ? t.submitted_ranks : t.missing_ranks).push_back(topo_.scope.world_rank(r));
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<std::string> CoordinatorStallCheck::check(const Coordinator& coordinator,
                                                        const CachedReadiness& readiness, const ResponseCache& cache,
                                                        Clock::time_point now) {
  if (!schedule_.due(now)) return std::nullopt;
  schedule_.begin_check(now);
  std::ostringstream shutdown_why;
  for (const StalledTensor& t : waits(coordinator, readiness, cache, now)) {
    const StallSchedule::Verdict v = schedule_.look_at(t.first_seen);
    if (!v.report && !v.shutdown) continue;
    std::ostringstream line;
    line << "tensor '" << t.name << "'" << topo_.scope.in_text() << " has waited "
         << static_cast<int64_t>(t.waiting_seconds) << " s: submitted by ranks " << ranks_text(t.submitted_ranks)
         << ", missing on ranks " << ranks_text(t.missing_ranks);
    if (v.report) {
      CHORUS_LOG(logger_, kWarning) << "stall: " << line.str()
                                    << " (do all ranks enqueue the same names in a reachable order?)";
    }
    if (v.shutdown) shutdown_why << (shutdown_why.tellp() > 0 ? "; " : "") << line.str();
  }
  if (shutdown_why.tellp() == 0) return std::nullopt;
  return stall_shutdown_reason(options_.stall_shutdown_seconds, shutdown_why.str());
}

bool CoordinatorStallCheck::heartbeat_due(bool waiting, Clock::time_point now) const {
  return waiting && heartbeat_every_.count() > 0 && topo_.size > 1 && now - last_sent_ >= heartbeat_every_;
}

}  // namespace chorus::detail
