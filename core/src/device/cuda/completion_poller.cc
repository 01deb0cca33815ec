#include "device/cuda/completion_poller.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace chorus::detail::gpu {

using Clock = std::chrono::steady_clock;

namespace {

std::string describe_batches(const std::deque<PendingBatch>& pending) {
  std::string out;
  for (const auto& b : pending) out += (out.empty() ? "" : "; ") + describe_batch(b);
  return out;
}

/// Completes (or fails) every entry of `batch`, waking their waiters once.
void finish_batch(PendingBatch& batch, const Status& status) {
  if (batch.on_finish) batch.on_finish(status);
  CompletionBatch wake;
  for (auto& e : batch.entries) finish_entry(std::move(e), status, wake);
  batch.entries.clear();
}

/// What a failed batch still needs held until its device work ends: its
/// signal, resources and tensors, without the handles (already completed).
PendingBatch draining_part(PendingBatch& batch) {
  PendingBatch keep;
  keep.what = batch.what;
  keep.done = std::move(batch.done);
  keep.resources = std::move(batch.resources);
  for (const auto& e : batch.entries) {
    TensorEntry held;
    held.input = e.input;
    held.output = e.output;
    keep.entries.push_back(std::move(held));
  }
  return keep;
}

}  // namespace

std::string describe_batch(const PendingBatch& batch, size_t max_names) {
  std::ostringstream out;
  out << batch.what << " of ";
  const size_t n = batch.entries.size();
  for (size_t i = 0; i < n && i < max_names; ++i) out << (i ? ", " : "") << batch.entries[i].name();
  if (n > max_names) out << " and " << (n - max_names) << " more";
  if (n == 0) out << "no tensors";
  return out.str();
}

CompletionPoller::CompletionPoller(PollBackoff backoff) : backoff_(backoff), thread_([this] { run(); }) {}

CompletionPoller::~CompletionPoller() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stop_deadline_ = Clock::now() + drain_wait_;
  }
  cv_.notify_all();
  thread_.join();
  // Device work that never ended may still use these: never free them.
  for (auto& b : draining_) new PendingBatch(std::move(b));  // NOLINT: deliberate leak
}

void CompletionPoller::submit(PendingBatch batch) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!fault_.is_ok() || stop_) {
    const Status why = !fault_.is_ok() ? fault_ : Status::aborted("the GPU data plane is shutting down");
    lock.unlock();
    return submit_failed(std::move(batch), why);
  }
  pending_.push_back(std::move(batch));
  pending_count_.store(pending_.size(), std::memory_order_relaxed);
  ++submitted_;
  lock.unlock();
  cv_.notify_all();
}

void CompletionPoller::submit_failed(PendingBatch batch, const Status& why) {
  PendingBatch keep = draining_part(batch);
  finish_batch(batch, why);
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_.push_back(std::move(keep));
  }
  cv_.notify_all();
}

std::string CompletionPoller::describe_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gpu::describe_batches(pending_);
}

PollWaits CompletionPoller::waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waits_;
}

Status CompletionPoller::fault() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fault_;
}

size_t CompletionPoller::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

size_t CompletionPoller::draining() const {
  std::lock_guard<std::mutex> lock(mu_);
  return draining_.size();
}

void CompletionPoller::fail_all(const Status& why) {
  std::unique_lock<std::mutex> lock(mu_);
  if (fault_.is_ok()) fault_ = why;
  fail_pending_locked(why, lock);
  lock.unlock();
  cv_.notify_all();
}

void CompletionPoller::fail_pending_locked(const Status& why, std::unique_lock<std::mutex>& lock) {
  std::deque<PendingBatch> failed;
  failed.swap(pending_);
  pending_count_.store(0, std::memory_order_relaxed);
  std::vector<PendingBatch> keep;
  for (auto& b : failed) keep.push_back(draining_part(b));
  for (auto& k : keep) draining_.push_back(std::move(k));
  lock.unlock();  // callbacks run without the lock
  for (auto& b : failed) finish_batch(b, why);
  lock.lock();
}

void CompletionPoller::drop_drained_locked() {
  auto ended = [](PendingBatch& b) { return !b.done || b.done->poll().code() != StatusCode::kInProgress; };
  draining_.erase(std::remove_if(draining_.begin(), draining_.end(), ended), draining_.end());
}

Status CompletionPoller::check_errors(AsyncErrorSource* source) {
  const Status s = source ? source->poll() : Status::ok();
  if (s.is_ok()) return s;
  return Status::unknown_error("GPU data plane: the communicator reported an asynchronous error (" + s.message() +
                               "); failing the pending GPU operations: " + describe_batches(pending_));
}

Status CompletionPoller::check_faults(Clock::time_point now) {
  std::set<AsyncErrorSource*> sources;
  for (const auto& b : pending_)
    if (b.errors) sources.insert(b.errors);
  for (AsyncErrorSource* source : sources) {
    const Status s = check_errors(source);
    if (!s.is_ok()) return s;
  }
  for (const auto& b : pending_) {
    if (now < b.deadline) continue;
    std::ostringstream msg;
    msg << "GPU data plane: " << describe_batch(b) << " did not finish within " << b.timeout_seconds
        << " s (CHORUS_GPU_OP_TIMEOUT_SECONDS): a rank or the device is stuck; failing the pending GPU operations: "
        << describe_batches(pending_);
    return Status::timeout(msg.str());
  }
  return Status::ok();
}

bool CompletionPoller::poll_once(std::unique_lock<std::mutex>& lock) {
  drop_drained_locked();
  bool progress = false;
  while (!pending_.empty()) {
    // The query runs unlocked; a fail_all() meanwhile moves the batch away,
    // which the check after it sees.
    const std::shared_ptr<DoneSignal> done = pending_.front().done;
    lock.unlock();
    const Status s = done ? done->poll() : Status::ok();
    lock.lock();
    if (pending_.empty() || pending_.front().done != done) continue;
    if (s.code() == StatusCode::kInProgress) break;
    if (!s.is_ok()) {  // the device work itself failed: that is a fault too
      const Status why = Status::unknown_error("GPU data plane: " + describe_batch(pending_.front()) +
                                               " failed on the device (" + s.message() +
                                               "); failing the pending GPU operations: " +
                                               describe_batches(pending_));
      if (fault_.is_ok()) fault_ = why;
      fail_pending_locked(why, lock);
      return true;
    }
    // Its events also complete when the communicator was aborted or broke:
    // the error source decides whether the data really arrived.
    const Status broken = check_errors(pending_.front().errors);
    if (!broken.is_ok()) {
      if (fault_.is_ok()) fault_ = broken;
      fail_pending_locked(broken, lock);
      return true;
    }
    PendingBatch batch = std::move(pending_.front());
    pending_.pop_front();
    pending_count_.store(pending_.size(), std::memory_order_relaxed);
    lock.unlock();
    finish_batch(batch, Status::ok());
    batch = PendingBatch();  // resources go now, outside the lock
    lock.lock();
    progress = true;
  }
  if (pending_.empty()) return progress;
  const auto now = Clock::now();
  if (now - last_fault_check_ < backoff_.fault_check_interval) return progress;
  last_fault_check_ = now;
  const Status f = check_faults(now);
  if (f.is_ok()) return progress;
  if (fault_.is_ok()) fault_ = f;
  fail_pending_locked(f, lock);
  return true;
}

bool CompletionPoller::finished_locked(Clock::time_point now) const {
  if (!stop_) return false;
  return (pending_.empty() && draining_.empty()) || now >= stop_deadline_;
}

void CompletionPoller::wait_for_work(std::unique_lock<std::mutex>& lock, std::chrono::nanoseconds& sleep,
                                     Clock::time_point last_progress) {
  if (pending_.empty() && draining_.empty()) {  // idle: spin a while, then sleep until a submit or the stop
    if (!stop_ && backoff_.now() - last_progress < backoff_.spin) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      return;
    }
    cv_.wait(lock, [this] { return stop_ || !pending_.empty() || !draining_.empty(); });
    sleep = std::chrono::nanoseconds(0);
    return;
  }
  if (backoff_.now() - last_progress < backoff_.spin) {
    ++waits_.spins;
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
    return;
  }
  sleep = std::min<std::chrono::nanoseconds>(backoff_.max_sleep,
                                             std::max<std::chrono::nanoseconds>(sleep * 2, std::chrono::microseconds(1)));
  ++waits_.sleeps;
  cv_.wait_for(lock, sleep);
}

void CompletionPoller::run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto last_progress = backoff_.now();
  uint64_t seen = submitted_;
  std::chrono::nanoseconds sleep(0);
  for (;;) {
    if (poll_once(lock)) {
      last_progress = backoff_.now();
      sleep = std::chrono::nanoseconds(0);
    }
    const auto now = Clock::now();
    if (stop_ && now >= stop_deadline_ && !pending_.empty())
      fail_pending_locked(Status::aborted("GPU data plane: shut down before the device finished: " +
                                          describe_batches(pending_)),
                          lock);
    if (finished_locked(Clock::now())) return;
    if (submitted_ != seen) {  // new work (maybe after an idle wait): spin for it
      seen = submitted_;
      last_progress = backoff_.now();
      sleep = std::chrono::nanoseconds(0);
    }
    wait_for_work(lock, sleep, last_progress);
  }
}

}  // namespace chorus::detail::gpu
