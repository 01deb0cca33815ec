#include "chorus/handle.h"

#include <thread>

#include "chorus/error.h"
#include "engine/handle_state.h"

namespace chorus {

namespace detail {

void HandleState::complete(Status status) {
  set_result(std::move(status));
  notify();
}

void HandleState::set_result(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  done_ = true;
  status_ = std::move(status);
}

void HandleState::notify() {
  cv_.notify_all();
  std::vector<std::function<void(const Status&)>> callbacks;
  Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) return;
    callbacks.swap(callbacks_);
    status = status_;
  }
  for (auto& fn : callbacks) fn(status);
}

// Registered once the result is set, the callback runs at once here: a
// caller that saw the operation complete (a wait) gets it on its thread.
void HandleState::on_complete(std::function<void(const Status&)> fn) {
  Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      callbacks_.push_back(std::move(fn));
      return;
    }
    status = status_;
  }
  fn(status);
}

void HandleState::set_output(std::shared_ptr<Tensor> output, std::vector<int64_t> received_splits) {
  std::lock_guard<std::mutex> lock(mu_);
  output_ = std::move(output);
  received_splits_ = std::move(received_splits);
}

void HandleState::set_last_joined_rank(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  last_joined_rank_ = rank;
}

int HandleState::last_joined_rank() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_joined_rank_;
}

std::vector<int64_t> HandleState::received_splits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_splits_;
}

std::shared_ptr<Tensor> HandleState::output() const {
  std::lock_guard<std::mutex> lock(mu_);
  return output_;
}

bool HandleState::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status HandleState::wait(std::optional<std::chrono::milliseconds> timeout) const {
  // A device collective's result is seen sooner by a spin than by a
  // sleeping thread's wake-up (a futex round trip, 10-20 us on a VM): it
  // spins up to 1 ms (as cudaStreamSynchronize, which raw NCCL callers wait
  // with; an H200 allreduces 256 MiB at one rank in 0.14 ms; measured there,
  // the spin took 256 MiB from 1.40x to 1.13-1.22x of raw NCCL). A host
  // collective does not spin: its work runs on the host's cores, and on the
  // 2-core VM a 30 us spin made the 4 KiB latency worse (np 2: 11-14 ->
  // 15-16 us; np 4: 47-54 -> 61-72 us).
  if (wait_spin_.count() > 0 && !done_.load(std::memory_order_acquire) &&
      (!timeout || *timeout >= std::chrono::milliseconds(1))) {
    const auto until = std::chrono::steady_clock::now() + wait_spin_;
    while (!done_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout) {
    if (!cv_.wait_for(lock, *timeout, [&] { return done_.load(); })) return Status::in_progress();
  } else {
    cv_.wait(lock, [&] { return done_.load(); });
  }
  return status_;
}

Status HandleState::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

}  // namespace detail

namespace {
void require_valid(const std::shared_ptr<detail::HandleState>& state) {
  if (!state) throw PreconditionError(Status::precondition_error("empty chorus::Handle (not returned by an enqueue)"));
}
}  // namespace

bool Handle::poll() const {
  require_valid(state_);
  return state_->done();
}

void Handle::wait() const {
  require_valid(state_);
  throw_if_error(state_->wait(std::nullopt));
}

void Handle::wait(std::chrono::milliseconds timeout) const {
  require_valid(state_);
  Status s = state_->wait(timeout);
  if (s.code() == StatusCode::kInProgress) {
    throw TimeoutError(Status::timeout("operation did not complete within " +
                                       std::to_string(timeout.count()) + " ms"));
  }
  throw_if_error(s);
}

Status Handle::wait_status() const {
  if (!state_) return Status::precondition_error("empty chorus::Handle (not returned by an enqueue)");
  return state_->wait(std::nullopt);
}

std::shared_ptr<Tensor> Handle::output() const {
  require_valid(state_);
  return state_->done() ? state_->output() : nullptr;
}

std::vector<int64_t> Handle::received_splits() const {
  require_valid(state_);
  return state_->done() ? state_->received_splits() : std::vector<int64_t>{};
}

int Handle::last_joined_rank() const {
  require_valid(state_);
  return state_->done() ? state_->last_joined_rank() : -1;
}

void Handle::on_complete(std::function<void(const Status&)> fn) const {
  require_valid(state_);
  if (!fn) throw InvalidArgumentError(Status::invalid_argument("Handle::on_complete: an empty callback"));
  state_->on_complete(std::move(fn));
}

Status Handle::status() const {
  if (!state_) return Status::precondition_error("empty chorus::Handle (not returned by an enqueue)");
  return state_->status();
}

}  // namespace chorus
