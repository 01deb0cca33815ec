#pragma once
// A rank stopped inside a collective (halfway through a large allreduce)
// leaves the other ranks waiting inside it on their background threads,
// where neither rank 0's stall check nor the workers' watch on rank 0 runs.
// This thread watches how long the background thread has been inside one
// response's collective: when that reaches N, 2N, ... seconds
// (CHORUS_STALL_CHECK_TIME_SECONDS) it warns, and at
// CHORUS_STALL_SHUTDOWN_TIME_SECONDS it ends the job with the stall
// shutdown's exit code, as the stall shutdown does between collectives.
// No thread is started when the stall check is off.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chorus/options.h"
#include "common/logging.h"

namespace chorus::detail {

class CollectiveWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  /// `end_job(exit_code)` ends the whole job (Backend::end_job); it is called
  /// on the watchdog's thread.
  CollectiveWatchdog(const RuntimeOptions& options, const Logger& logger, std::function<void(int)> end_job);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  /// The background thread enters the collective of the tensors `names`
  /// (fused); `names` must live until left(). Costs a lock and a clock read:
  /// the message is written only when there is one to give.
  void entered(const std::vector<std::string>& names);
  void entered(std::vector<std::string>&&) = delete;  // a temporary would not live until left()
  /// ... and has left it.
  void left();

 private:
  void run();
  std::string inside_text(Clock::time_point now) const;  // under mu_, while inside_

  const RuntimeOptions& options_;
  const Logger& logger_;
  const std::function<void(int)> end_job_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool inside_ = false;
  uint64_t entries_ = 0;  // which collective: a new one restarts the count
  const std::vector<std::string>* names_ = nullptr;  // the collective's tensors, while inside_
  Clock::time_point since_;
  std::thread thread_;
};

}  // namespace chorus::detail
