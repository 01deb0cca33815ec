#include "device/cuda/copy_plan.h"

#include <limits>

namespace chorus::detail::gpu {

int64_t padded_bytes(int64_t bytes) {
  return (bytes + kFusionAlignment - 1) / kFusionAlignment * kFusionAlignment;
}

bool plan_copies(const std::vector<int64_t>& counts, int64_t element_size, int max_per_launch, CopyPlan* plan,
                 std::string* error) {
  if (element_size <= 0 || kFusionAlignment % element_size != 0) {
    *error = "element size " + std::to_string(element_size) + " does not divide the fusion alignment";
    return false;
  }
  if (max_per_launch < 1 || max_per_launch > kMaxCopiesPerLaunch) {
    *error = "copies per launch " + std::to_string(max_per_launch) + " is outside 1.." +
             std::to_string(kMaxCopiesPerLaunch);
    return false;
  }
  CopyPlan out;
  out.offsets.reserve(counts.size());
  const int64_t limit = std::numeric_limits<int64_t>::max() / 2;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0 || counts[i] > limit / element_size) {
      *error = "piece " + std::to_string(i) + " has an invalid element count " + std::to_string(counts[i]);
      return false;
    }
    out.offsets.push_back(out.buffer_bytes);
    out.buffer_bytes += padded_bytes(counts[i] * element_size);
    if (out.buffer_bytes > limit) {
      *error = "the fused batch is too large (" + std::to_string(counts.size()) + " pieces)";
      return false;
    }
    if (counts[i] == 0) continue;  // nothing to copy; it keeps its (empty) place
    if (out.launches.empty() || out.launches.back().size() == static_cast<size_t>(max_per_launch)) {
      out.launches.emplace_back();
    }
    out.launches.back().push_back(i);
  }
  *plan = std::move(out);
  return true;
}

}  // namespace chorus::detail::gpu
