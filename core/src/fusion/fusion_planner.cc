#include "fusion/fusion_planner.h"

#include <algorithm>
#include <climits>
#include <tuple>

namespace chorus::detail {

namespace {

bool fusable(ResponseType type) { return type == ResponseType::kAllreduce || type == ResponseType::kAllgather; }

// Allgathers only move bytes: op and scale factors do not apply to them.
bool fusable_together(const Request& a, const Request& b) {
  if (a.type != b.type || a.dtype != b.dtype || a.device != b.device) return false;
  return a.type != CollectiveType::kAllreduce ||
         std::tie(a.op, a.prescale, a.postscale) == std::tie(b.op, b.prescale, b.postscale);
}

// A fused allgather moves its packed bytes in one allgatherv whose counts
// are MPI ints, so its bucket stops short of 2^31 bytes.
int64_t bucket_limit(ResponseType type, int64_t threshold_bytes) {
  return type == ResponseType::kAllgather ? std::min<int64_t>(threshold_bytes, INT_MAX) : threshold_bytes;
}

struct Bucket {
  size_t output_index;  // where its response sits in the plan
  Request key;
};

// Appends `add` (one tensor) to the fused response `into`.
void merge(Response& into, const Response& add) {
  into.names.push_back(add.names.front());
  into.total_bytes += add.total_bytes;
  into.first_dims.insert(into.first_dims.end(), add.first_dims.begin(), add.first_dims.end());
  into.joined_specs.insert(into.joined_specs.end(), add.joined_specs.begin(), add.joined_specs.end());
}

}  // namespace

std::vector<Response> plan_fusion(std::vector<ReadyTensor> ready, int64_t threshold_bytes) {
  std::vector<Response> plan;
  std::vector<Bucket> open;
  for (ReadyTensor& t : ready) {
    if (!fusable(t.response.type)) {
      plan.push_back(std::move(t.response));
      continue;
    }
    Bucket* target = nullptr;
    for (Bucket& b : open) {
      const Response& r = plan[b.output_index];
      if (fusable_together(b.key, t.request) && r.total_bytes + t.response.total_bytes <= bucket_limit(r.type, threshold_bytes)) {
        target = &b;
        break;
      }
    }
    if (target == nullptr) {
      open.push_back({plan.size(), t.request});
      plan.push_back(std::move(t.response));
      continue;
    }
    merge(plan[target->output_index], t.response);
  }
  return plan;
}

}  // namespace chorus::detail
