#pragma once
// Shared completion state behind a Handle: set once by the background
// thread, read by any number of waiting threads.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>

#include <memory>
#include <vector>

#include "chorus/status.h"
#include "chorus/tensor.h"

namespace chorus::detail {

class HandleState {
 public:
  /// How long wait() spins before it sleeps (see handle.cc).
  static constexpr std::chrono::microseconds kHostWaitSpin{0};
  static constexpr std::chrono::microseconds kDeviceWaitSpin{1000};
  HandleState() = default;
  explicit HandleState(std::chrono::microseconds wait_spin) : wait_spin_(wait_spin) {}
  /// Records the result and wakes every waiter. Later calls are ignored.
  void complete(Status status);
  /// Records the result without waking anyone yet: completing a batch first
  /// and waking after (notify()) lets a thread that waits on the batch's
  /// handles one by one wake once, not once per handle.
  void set_result(Status status);
  /// Wakes the waiters, then runs the completion callbacks (outside the lock).
  void notify();
  /// Runs `fn` once with the result: at once, on this thread, when the
  /// result is already set; else on the thread that notifies (the
  /// background thread).
  void on_complete(std::function<void(const Status&)> fn);
  bool done() const;
  /// Waits up to `timeout` (forever when empty); returns the result, or
  /// InProgress when the time ran out first.
  Status wait(std::optional<std::chrono::milliseconds> timeout) const;
  Status status() const;
  /// The output allocated during the operation (allgather), set before the
  /// result; nullptr for operations that write into the caller's tensors.
  void set_output(std::shared_ptr<Tensor> output, std::vector<int64_t> received_splits = {});
  std::shared_ptr<Tensor> output() const;
  std::vector<int64_t> received_splits() const;
  /// Join: the last rank to join.
  void set_last_joined_rank(int rank);
  int last_joined_rank() const;

 private:
  const std::chrono::microseconds wait_spin_ = kHostWaitSpin;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::atomic<bool> done_{false};  // written under mu_; read without it by wait()'s spin
  std::vector<std::function<void(const Status&)>> callbacks_;
  Status status_ = Status::in_progress();
  std::shared_ptr<Tensor> output_;
  std::vector<int64_t> received_splits_;
  int last_joined_rank_ = -1;
};

}  // namespace chorus::detail
