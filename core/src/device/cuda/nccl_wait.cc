#include "device/cuda/nccl_wait.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace chorus::detail::gpu {

OpDeadline OpDeadline::after(double seconds) {
  OpDeadline d;
  if (seconds <= 0) return d;
  d.seconds = seconds;
  d.at = std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  return d;
}

Status wait_in_progress(const std::function<Status()>& poll, const OpDeadline& deadline, const std::string& what,
                        const SteadyNow& now) {
  std::chrono::nanoseconds sleep(0);
  for (int polls = 0;; ++polls) {
    const Status s = poll();
    if (s.is_ok()) return s;
    if (s.code() != StatusCode::kInProgress) return Status(s.code(), what + ": " + s.message());
    if (now() >= deadline.at) {
      std::ostringstream msg;
      msg << what << " was still in progress after " << deadline.seconds
          << " s (CHORUS_GPU_OP_TIMEOUT_SECONDS): a peer never joined or the connection setup is stuck";
      return Status::timeout(msg.str());
    }
    if (polls < 64) {  // a connection usually completes within microseconds: spin first
      std::this_thread::yield();
      continue;
    }
    sleep = std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(1),
                                               std::max<std::chrono::nanoseconds>(sleep * 2, std::chrono::microseconds(1)));
    std::this_thread::sleep_for(sleep);
  }
}

bool wait_until_done(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace chorus::detail::gpu
