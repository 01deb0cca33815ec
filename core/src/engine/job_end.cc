#include "engine/job_end.h"

#include <cstdio>
#include <string>
#include <vector>

#include "common/rank_text.h"

namespace chorus::detail {

namespace {

// What end_job() will do, for the log: a member of an elastic job lives on.
std::string ending(const Backend& backend, int exit_code) {
  return backend.outlives_job_end() ? std::string("leaving this world (elastic: the next one may form)")
                                    : "ending the job with exit code " + std::to_string(exit_code);
}

}  // namespace

void close_or_end_job(Backend& backend, const Logger& logger, const LoopEnd& end, std::chrono::milliseconds bound) {
  if (end.stall) CHORUS_LOG(logger, kError) << end.reason << "; " << ending(backend, kStallShutdownExitCode);
  const bool closed = backend.control().close(bound);
  if (!closed) {
    std::vector<int> missing = backend.control().not_at_close();  // the channel's ranks: name global ones
    const SetScope& scope = backend.topology().scope;
    for (int& r : missing) r = scope.world_rank(r);
    const std::string who = missing.empty() ? "some rank" : rank_list(missing) + scope.in_text();
    CHORUS_LOG(logger, kError) << "shutdown: " << who << " did not get to the close within " << bound.count() / 1000.0
                               << " s (stopped, gone or stuck in a collective); "
                               << ending(backend, end.stall ? kStallShutdownExitCode : kUnansweredShutdownExitCode)
                               << (end.stall ? "" : " after: " + end.reason);
  }
  if (!end.stall && closed) return;
  std::fflush(stdout);
  std::fflush(stderr);
  backend.end_job(end.stall ? kStallShutdownExitCode : kUnansweredShutdownExitCode);
}

}  // namespace chorus::detail
