#include "engine/idle_waiter.h"

#include <algorithm>
#include <thread>

namespace chorus::detail {

namespace {
constexpr std::chrono::nanoseconds kFirstSleep = std::chrono::microseconds(10);

std::chrono::nanoseconds from_us(double us) {
  return std::chrono::nanoseconds(static_cast<int64_t>(us * 1000.0));
}
}  // namespace

IdleWaiter::IdleWaiter(const RuntimeOptions& options, TensorQueue& queue)
    : queue_(queue),
      spin_(from_us(options.spin_time_us)),
      pending_spin_(std::max(from_us(options.pending_spin_time_us), spin_)),
      max_sleep_(std::max(from_us(options.cycle_time_ms * 1000.0), kFirstSleep)),
      wake_on_enqueue_(options.wake_on_enqueue),
      last_progress_(Clock::now()),
      next_sleep_(kFirstSleep) {}

void IdleWaiter::set_cycle_time_ms(double ms) { max_sleep_ = std::max(from_us(ms * 1000.0), kFirstSleep); }

void IdleWaiter::on_progress() {
  last_progress_ = Clock::now();
  next_sleep_ = kFirstSleep;
}

void IdleWaiter::wait(bool pending) {
  if (!wake_on_enqueue_) {
    // Fixed cycle (Horovod's way), kept for comparison: see docs/performance.md.
    queue_.wait_for_work(max_sleep_);
    return;
  }
  if (Clock::now() - last_progress_ < (pending ? pending_spin_ : spin_)) {
    std::this_thread::yield();
    return;
  }
  queue_.wait_for_work(next_sleep_);
  next_sleep_ = std::min(next_sleep_ * 2, max_sleep_);
}

}  // namespace chorus::detail
