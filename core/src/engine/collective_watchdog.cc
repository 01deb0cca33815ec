#include "engine/collective_watchdog.h"

#include <algorithm>

#include "negotiation/stall_schedule.h"
#include "engine/job_end.h"

namespace chorus::detail {

CollectiveWatchdog::CollectiveWatchdog(const RuntimeOptions& options, const Logger& logger,
                                       std::function<void(int)> end_job)
    : options_(options), logger_(logger), end_job_(std::move(end_job)) {
  if (options_.stall_check_seconds > 0) thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CollectiveWatchdog::entered(const std::vector<std::string>& names) {
  if (!thread_.joinable() || names.empty()) return;
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  inside_ = true;
  ++entries_;
  names_ = &names;
  since_ = now;
}

std::string CollectiveWatchdog::inside_text(Clock::time_point now) const {
  std::string out = "this rank has been inside the collective of tensor '" + names_->front() + "'";
  if (names_->size() > 1) out += " and " + std::to_string(names_->size() - 1) + " more fused with it";
  return out + " for " + std::to_string(static_cast<int64_t>(std::chrono::duration<double>(now - since_).count())) +
         " s: a rank taking part in it is stopped or stuck (no other stall check runs meanwhile)";
}

void CollectiveWatchdog::left() {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mu_);
  inside_ = false;
  names_ = nullptr;
}

// Sleeps until the collective being watched reaches its next milestone, or
// N from now when none is; entering and leaving collectives does not wake
// it, so they cost the background thread a lock and nothing more. A
// collective entered meanwhile is at most N old when it looks next.
void CollectiveWatchdog::run() {
  const double warn = options_.stall_check_seconds, shutdown = options_.stall_shutdown_seconds;
  std::unique_lock<std::mutex> lock(mu_);
  StallSchedule schedule(warn, shutdown, Clock::now());
  uint64_t watched = 0;
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    if (inside_ && watched != entries_) {  // a new collective: counted from its start
      watched = entries_;
      schedule = StallSchedule(warn, shutdown, since_);
    }
    if (inside_ && schedule.due(now)) {
      schedule.begin_check(now);
      const StallSchedule::Verdict v = schedule.look_at(since_);
      const std::string text = v.report || v.shutdown ? inside_text(now) : std::string();
      if (v.shutdown) {
        CHORUS_LOG(logger_, kError) << stall_shutdown_reason(shutdown, text) << "; ending the job with exit code "
                                    << kStallShutdownExitCode;
        lock.unlock();
        // The background thread is inside MPI meanwhile: the backend aborts
        // through MPI only where MPI_THREAD_MULTIPLE allows it, else exits.
        end_job_(kStallShutdownExitCode);
        return;
      }
      if (v.report) {
        CHORUS_LOG(logger_, kWarning) << "stall: " << text;
      }
    }
    const Clock::time_point idle_wake = now + stall_duration(warn);
    cv_.wait_until(lock, inside_ ? std::min(schedule.next_check(), idle_wake) : idle_wake);
  }
}

}  // namespace chorus::detail
