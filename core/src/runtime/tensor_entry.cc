#include "runtime/tensor_entry.h"

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
  if (!status.is_ok() && first_error_.is_ok()) first_error_ = status;
  entry.group.reset();  // break the entry -> group -> entry cycle
  done_.push_back(std::move(entry));
  if (--remaining_ > 0) return;
  for (auto& e : done_) complete_entry(e, first_error_, batch);
  done_.clear();
}

}  // namespace chorus::detail
