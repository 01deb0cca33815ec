#pragma once
// One enqueued operation as the background thread holds it.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/tensor.h"
#include "comm/backend.h"
#include "negotiation/messages.h"
#include "engine/device_memory.h"
#include "engine/handle_state.h"

namespace chorus::detail {

class GroupCompletion;

/// A process-set registration on its way: the background thread fills
/// `backend` with this rank's backend of the new set (nullptr when this rank
/// is not a member); the registering thread then starts the set on it.
struct ProcessSetSplit {
  int32_t id = 0;
  std::vector<int> members;
  std::unique_ptr<Backend> backend;
};

struct TensorEntry {
  Request request;  ///< what this rank tells the coordinator
  std::chrono::steady_clock::time_point enqueued;  ///< for the timeline
  std::shared_ptr<Tensor> input;
  std::shared_ptr<Tensor> output;
  /// CUDA tensors: the input's ready point, recorded on the producer's
  /// stream at enqueue; device work on the input waits on it (on the device).
  std::shared_ptr<DeviceMark> ready;
  /// CUDA tensors: an out-of-place output's ready point, recorded at enqueue
  /// when its stream differs from the input's; writes to it wait on it.
  std::shared_ptr<DeviceMark> output_ready;
  OpHooks hooks;
  std::shared_ptr<HandleState> handle;
  /// Set for members of a group (grouped allreduce, allgather, reducescatter): they complete together.
  std::shared_ptr<GroupCompletion> group;
  /// Set for a process-set registration.
  std::shared_ptr<ProcessSetSplit> process_set_split;

  const std::string& name() const { return request.name; }
};

/// Handles completed but not yet woken: wake() wakes their waiters at once.
class CompletionBatch {
 public:
  void add(std::shared_ptr<HandleState> handle) { handles_.push_back(std::move(handle)); }
  void wake();
  ~CompletionBatch() { wake(); }

 private:
  std::vector<std::shared_ptr<HandleState>> handles_;
};

/// Holds back the completion of a group's members until the last one ran.
/// Thread-safe: a group split over several responses may finish on two
/// threads (the NCCL path completes one response on its completion thread
/// while the background thread fails the next after a fault).
class GroupCompletion {
 public:
  explicit GroupCompletion(size_t members) : remaining_(members) {}
  /// Records one member's result; when it is the last, completes them all
  /// (each with the first error of the group, if any).
  void finish(TensorEntry entry, const Status& status, CompletionBatch& batch);

 private:
  std::mutex mu_;
  size_t remaining_;
  Status first_error_;
  std::vector<TensorEntry> done_;
};

/// Runs the entry's callback, then records its result; its waiters wake
/// with `batch`.
void complete_entry(TensorEntry& entry, const Status& status, CompletionBatch& batch);

/// Completes an entry, or defers it to its group.
void finish_entry(TensorEntry entry, const Status& status, CompletionBatch& batch);

/// Turns a built entry into its refusal (its tensors dropped; its name,
/// group and hooks kept): negotiated like any request, the coordinator then
/// fails the tensor on every rank with `why` (api/collective_entries.h).
void refuse(TensorEntry& entry, const std::string& why);

}  // namespace chorus::detail
