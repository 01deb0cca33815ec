#include "engine/tensor_entry.h"

namespace chorus::detail {

void CompletionBatch::wake() {
  for (auto& h : handles_) h->notify();
  handles_.clear();
}

void complete_entry(TensorEntry& entry, const Status& status, CompletionBatch& batch) {
  if (entry.hooks.on_complete) entry.hooks.on_complete(status);
  if (entry.handle) {
    entry.handle->set_result(status);
    batch.add(entry.handle);
  }
}

void finish_entry(TensorEntry entry, const Status& status, CompletionBatch& batch) {
  if (entry.group) {
    auto group = entry.group;
    group->finish(std::move(entry), status, batch);
  } else {
    complete_entry(entry, status, batch);
  }
}

void GroupCompletion::finish(TensorEntry entry, const Status& status, CompletionBatch& batch) {
  entry.group.reset();  // break the entry -> group -> entry cycle
  std::vector<TensorEntry> members;
  Status result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.is_ok() && first_error_.is_ok()) first_error_ = status;
    done_.push_back(std::move(entry));
    if (--remaining_ > 0) return;
    members.swap(done_);
    result = first_error_;
  }
  for (auto& e : members) complete_entry(e, result, batch);  // callbacks run without the lock
}

void refuse(TensorEntry& entry, const std::string& why) {
  Request& r = entry.request;
  r.refused = why.empty() ? "refused without a reason" : why;  // empty would mean "not refused"
  // What the refusal carries besides its name and group is never read; it
  // must still decode (a CPU request, an empty shape).
  r.shape.clear();
  r.splits.clear();
  r.process_set_ranks.clear();  // a registration's bad ranks (-1) would not decode on rank 0
  r.device = kCpuDevice;
  r.device_kind = DeviceKind::kCpu;
  entry.input.reset();
  entry.output.reset();
  entry.ready.reset();
  entry.output_ready.reset();
}

}  // namespace chorus::detail
