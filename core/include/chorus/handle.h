#pragma once
/// \file handle.h
/// Handle: the caller's view of an operation that runs in the background.

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "chorus/export.h"
#include "chorus/status.h"
#include "chorus/tensor.h"

namespace chorus {

namespace detail {
class HandleState;
class Engine;
}

/// Completion of one enqueued operation. Cheap to copy; copies share state.
class CHORUS_API Handle {
 public:
  Handle() = default;

  /// True once the operation finished, successfully or not. Never blocks.
  bool poll() const;
  /// Blocks until the operation finished; throws chorus::Error if it failed.
  void wait() const;
  /// Like wait(), but gives up after `timeout` and throws TimeoutError
  /// (the operation itself goes on; wait again later).
  void wait(std::chrono::milliseconds timeout) const;
  /// Blocks until done and returns the result instead of throwing.
  Status wait_status() const;
  /// Calls `fn` once with the result when the operation finishes: on the
  /// background thread that finished it, or at once on this thread when it
  /// already has. `fn` must be short and must not wait for another
  /// operation (it holds up the completion of the ones after it); it may
  /// read this handle. For frameworks that complete their own ops
  /// asynchronously (a TensorFlow AsyncOpKernel's done callback).
  void on_complete(std::function<void(const Status&)> fn) const;
  /// The result so far: InProgress while running.
  Status status() const;
  bool valid() const { return state_ != nullptr; }
  /// The tensor an operation allocated for its result (allgather), once it
  /// completed successfully; nullptr before that and for operations that
  /// write into the caller's tensors.
  std::shared_ptr<Tensor> output() const;
  /// Alltoall: rows received from each rank, in rank order, once completed.
  std::vector<int64_t> received_splits() const;
  /// Join: the last rank that joined, once completed (-1 otherwise).
  int last_joined_rank() const;

 private:
  friend class detail::Engine;  // makes the handles of what it enqueues
  explicit Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

  std::shared_ptr<detail::HandleState> state_;
};

}  // namespace chorus
