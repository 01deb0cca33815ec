#include "fusion/fusion_planner.h"

#include <tuple>

namespace chorus::detail {

namespace {

bool fusable_together(const Request& a, const Request& b) {
  return std::tie(a.dtype, a.op, a.prescale, a.postscale, a.device) ==
         std::tie(b.dtype, b.op, b.prescale, b.postscale, b.device);
}

struct Bucket {
  size_t output_index;  // where its response sits in the plan
  Request key;
};

}  // namespace

std::vector<Response> plan_fusion(std::vector<ReadyTensor> ready, int64_t threshold_bytes) {
  std::vector<Response> plan;
  std::vector<Bucket> open;
  for (ReadyTensor& t : ready) {
    if (t.response.type != ResponseType::kAllreduce) {
      plan.push_back(std::move(t.response));
      continue;
    }
    Bucket* target = nullptr;
    for (Bucket& b : open) {
      const Response& r = plan[b.output_index];
      if (fusable_together(b.key, t.request) &&
          r.total_bytes + t.response.total_bytes <= threshold_bytes) {
        target = &b;
        break;
      }
    }
    if (target == nullptr) {
      open.push_back({plan.size(), t.request});
      plan.push_back(std::move(t.response));
      continue;
    }
    Response& r = plan[target->output_index];
    r.names.push_back(t.response.names.front());
    r.total_bytes += t.response.total_bytes;
    r.joined_specs.insert(r.joined_specs.end(), t.response.joined_specs.begin(), t.response.joined_specs.end());
  }
  return plan;
}

}  // namespace chorus::detail
