#pragma once
// The completion thread of the GPU data plane. The background thread launches
// a batch (a response's device work) and hands it here with its "done"
// signal (a CUDA event) and a deadline; this thread polls the oldest batch's
// signal and the communicator's asynchronous error with a backoff, completes
// the entries in launch order, and on an asynchronous error or a batch past
// its deadline fails everything pending with a message naming the tensors
// and reports the fault (DeviceOperations::fault()). Aborting the
// communicators is left to the launching thread (NCCL wants it there).
//
// No CUDA or NCCL type appears here: the signal and the error source are
// interfaces, so the ordering, backoff and timeout logic are unit-tested
// with fakes (test/gpu/test_completion_poller.cc).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chorus/status.h"
#include "engine/tensor_entry.h"

namespace chorus::detail::gpu {

/// Whether one batch's device work has finished. Never blocks.
class DoneSignal {
 public:
  virtual ~DoneSignal() = default;
  /// OK when finished, in_progress while it runs, an error when it failed.
  virtual Status poll() = 0;
};

/// A communicator's asynchronous error (ncclCommGetAsyncError). Never blocks.
class AsyncErrorSource {
 public:
  virtual ~AsyncErrorSource() = default;
  /// OK, or the error the communicator reported.
  virtual Status poll() = 0;
};

/// One launched response on its way to completion.
struct PendingBatch {
  std::string what;                    ///< e.g. "allreduce", for the messages
  std::vector<TensorEntry> entries;    ///< completed (or failed) together, in order
  /// Shared so that the completion thread can poll it without its lock
  /// (a device query takes ~1.3 us, which a submit would otherwise wait for).
  std::shared_ptr<DoneSignal> done;
  AsyncErrorSource* errors = nullptr;  ///< the communicator it ran on; may be null
  std::shared_ptr<void> resources;     ///< scratch, outputs: kept until `done` reports
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double timeout_seconds = 0;          ///< what the deadline came from, for the message
  /// Runs on the completion thread before the entries complete (statistics).
  std::function<void(const Status&)> on_finish;
};

/// How the thread waits while batches are pending: busy-polls (yielding)
/// for `spin` after the last completion, then sleeps in doubling steps up
/// to `max_sleep`. With nothing pending it spins the same `spin` after the
/// last completion (the next batch of a training step usually follows
/// within microseconds, and a thread sleeping on the condition variable
/// would see it only after a wake-up: measured ~5 us per call on an H200
/// VM), then sleeps on a condition variable.
/// Every submit restarts the spin phase, so a batch handed over after an
/// idle spell is polled at once, not after a doubling sleep.
/// The spin covers a collective of up to about a millisecond (256 MiB at
/// one rank on an H200 takes 0.14 ms): measured there, a 50 us spin then
/// doubling sleeps (whose wake-up the kernel's timer slack delays further)
/// saw such a batch end up to ~100 us late. Longer work is seen within ~100 us.
/// Communicator errors and deadlines are checked every
/// `fault_check_interval`, not at every poll (a batch's own error source is
/// always checked before it completes OK): the check takes the lock and
/// calls NCCL, and submit() waits for that lock.
struct PollBackoff {
  std::chrono::nanoseconds spin = std::chrono::milliseconds(1);
  std::chrono::nanoseconds max_sleep = std::chrono::microseconds(100);
  /// The clock of the spin/sleep decision (a fake one in tests).
  std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
  std::chrono::nanoseconds fault_check_interval = std::chrono::microseconds(500);
};

/// How the thread has waited while batches were pending.
struct PollWaits {
  uint64_t spins = 0;   ///< yields within the spin phase
  uint64_t sleeps = 0;  ///< timed sleeps after it
};

class CompletionPoller {
 public:
  explicit CompletionPoller(PollBackoff backoff = {});
  /// Waits up to the drain wait for pending batches to finish, fails what is
  /// left (AbortedError naming the tensors) and stops the thread. Resources
  /// of batches whose device work never ended are leaked, never freed under
  /// a running kernel.
  ~CompletionPoller();
  CompletionPoller(const CompletionPoller&) = delete;
  CompletionPoller& operator=(const CompletionPoller&) = delete;

  /// Hands over a launched batch, after every batch launched before it.
  /// After a fault the batch fails at once with the fault's message.
  void submit(PendingBatch batch);
  /// A batch whose launch failed part-way: its entries fail now with `why`,
  /// while its tensors and resources stay held until `batch.done` (recorded
  /// after whatever was queued) reports the device work ended.
  void submit_failed(PendingBatch batch, const Status& why);
  /// The first fault (an asynchronous error, a batch past its deadline), or OK.
  Status fault() const;
  /// Fails every pending batch with `why` (and records it as the fault if
  /// there was none); their resources stay held until their device work ends.
  void fail_all(const Status& why);
  /// Batches not yet completed or failed.
  size_t pending() const;
  /// The same without the lock (may lag a completion by a poll), for a
  /// caller that asks often: the background loop's idle wait.
  size_t pending_relaxed() const { return pending_count_.load(std::memory_order_relaxed); }
  /// Failed batches whose device work has not ended yet.
  size_t draining() const;
  PollWaits waits() const;
  /// "allreduce of a, b; broadcast of c": the pending batches, for messages.
  std::string describe_pending() const;
  /// How long the destructor waits for unfinished device work.
  void set_drain_wait(std::chrono::milliseconds wait) { drain_wait_ = wait; }

 private:
  void run();
  /// One pass: completes finished batches in order, checks errors and
  /// deadlines. Returns true when something completed.
  bool poll_once(std::unique_lock<std::mutex>& lock);
  Status check_faults(std::chrono::steady_clock::time_point now);
  Status check_errors(AsyncErrorSource* source);
  void fail_pending_locked(const Status& why, std::unique_lock<std::mutex>& lock);
  void drop_drained_locked();
  void wait_for_work(std::unique_lock<std::mutex>& lock, std::chrono::nanoseconds& sleep,
                     std::chrono::steady_clock::time_point last_progress);
  bool finished_locked(std::chrono::steady_clock::time_point now) const;

  const PollBackoff backoff_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PendingBatch> pending_;
  std::atomic<size_t> pending_count_{0};  ///< pending_.size(), kept after each change
  std::vector<PendingBatch> draining_;
  Status fault_;
  bool stop_ = false;
  uint64_t submitted_ = 0;  ///< batches handed over: a new one restarts the spin
  PollWaits waits_;
  std::chrono::steady_clock::time_point stop_deadline_;
  std::chrono::steady_clock::time_point last_fault_check_;
  std::chrono::milliseconds drain_wait_{10000};
  std::thread thread_;
};

/// "allreduce of grad.w, grad.b" (at most `max_names` names, then "and N more").
std::string describe_batch(const PendingBatch& batch, size_t max_names = 8);

}  // namespace chorus::detail::gpu
