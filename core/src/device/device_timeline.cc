#include "device/device_timeline.h"

#include <utility>

namespace chorus::detail {

std::string device_activity(const char* prefix, ResponseType type) {
  const char* name = "ERROR";
  switch (type) {
    case ResponseType::kAllreduce: name = "ALLREDUCE"; break;
    case ResponseType::kBroadcast: name = "BCAST"; break;  // Horovod's NCCL_BCAST, MPI_BCAST
    case ResponseType::kAllgather: name = "ALLGATHER"; break;
    case ResponseType::kBarrier: name = "BARRIER"; break;
    case ResponseType::kReducescatter: name = "REDUCESCATTER"; break;
    case ResponseType::kAlltoall: name = "ALLTOALL"; break;
    case ResponseType::kJoin: name = "JOIN"; break;
    case ResponseType::kAddProcessSet: name = "ADD_PROCESS_SET"; break;
    case ResponseType::kError: break;
  }
  return std::string(prefix) + name;
}

TensorSpans::TensorSpans(Timeline& timeline, const std::vector<TensorEntry>& entries) : timeline_(&timeline) {
  if (!timeline.enabled()) return;
  names_.reserve(entries.size());
  for (const TensorEntry& e : entries) names_.push_back(e.name());
}

void TensorSpans::record(const std::string& label, Clock::time_point start, Clock::time_point end) const {
  for (const std::string& name : names_) timeline_->record(name, label, start, end);
}

std::function<void(const Status&)> device_span(Timeline& timeline, std::string label,
                                               const std::vector<TensorEntry>& entries,
                                               Timeline::Clock::time_point launched) {
  TensorSpans spans(timeline, entries);
  if (!spans.on()) return {};
  return [spans = std::move(spans), label = std::move(label), launched](const Status&) {
    spans.record(label, launched, Timeline::Clock::now());
  };
}

}  // namespace chorus::detail
