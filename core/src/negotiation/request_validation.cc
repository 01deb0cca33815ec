// Cross-rank consistency checks of one tensor's requests.
#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "common/rank_text.h"
#include "negotiation/collective_traits.h"
#include "negotiation/coordinator.h"

namespace chorus::detail {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// Groups the ranks by the value `describe` gives their request; reports the
// property when more than one value occurs.
void check_property(const char* property, const std::vector<Request>& requests,
                    const std::function<std::string(const Request&)>& describe, const SetScope& scope,
                    std::vector<std::string>* problems) {
  std::map<std::string, std::vector<int>> ranks_by_value;
  std::vector<std::string> order;  // values in order of first (lowest) rank
  std::vector<const Request*> sorted;
  for (const auto& r : requests) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  for (const Request* r : sorted) {
    std::string v = describe(*r);
    auto& ranks = ranks_by_value[v];
    if (ranks.empty()) order.push_back(v);
    ranks.push_back(scope.world_rank(r->rank));
  }
  if (order.size() < 2) return;
  std::ostringstream out;
  out << property << " differs: ";
  for (size_t i = 0; i < order.size(); ++i) {
    out << (i ? "; " : "") << order[i] << " on " << rank_list(ranks_by_value[order[i]]);
  }
  problems->push_back(out.str());
}

// Every property the ranks must agree on, compared directly: the common
// case (they agree) costs a few comparisons, not a formatted report.
bool all_agree(const std::vector<Request>& requests) {
  for (const Request& b : requests) {
    if (!same_signature(requests.front(), b)) return false;
  }
  return true;
}

// What must agree of a shape: all of it, or all but the first dimension.
std::string agreed_shape_text(const Request& r) {
  if (!traits_of(r.type).first_dim_varies || r.shape.empty()) return shape_text(r.shape);
  std::vector<int64_t> rest(r.shape.begin() + 1, r.shape.end());
  return "[*" + std::string(rest.empty() ? "" : ", ") + shape_text(rest).substr(1);
}

}  // namespace

Status validate_requests(const std::string& name, const std::vector<Request>& requests,
                         int world_size, const SetScope& scope) {
  if (static_cast<int>(requests.size()) == world_size && all_agree(requests)) {
    const Request& r = requests.front();
    if (r.type != CollectiveType::kBroadcast || r.root_rank >= 0) return Status::ok();
  }
  std::vector<std::string> problems;
  if (static_cast<int>(requests.size()) != world_size) {
    problems.push_back("expected one request per rank, got " + std::to_string(requests.size()));
  }
  check_property("operation", requests, [](const Request& r) { return std::string(collective_name(r.type)); }, scope, &problems);
  if (problems.empty()) {
    check_property("dtype", requests, [](const Request& r) { return std::string(dtype_name(r.dtype)); }, scope, &problems);
    check_property(traits_of(requests.front().type).first_dim_varies ? "shape after the first dimension" : "shape",
                   requests, [](const Request& r) { return agreed_shape_text(r); }, scope, &problems);
    check_property("device", requests,
                   [](const Request& r) { return r.device == kCpuDevice ? std::string("cpu") : "device " + std::to_string(r.device); },
                   scope, &problems);
    check_property("group", requests,
                   [](const Request& r) { return r.group.empty() ? std::string("none") : r.group + " of " + std::to_string(r.group_size); },
                   scope, &problems);
    if (traits_of(requests.front().type).reduces) {
      check_property("reduce op", requests, [](const Request& r) { return std::string(reduce_op_name(r.op)); }, scope, &problems);
      check_property("prescale factor", requests, [](const Request& r) { return number_text(r.prescale); }, scope, &problems);
      check_property("postscale factor", requests, [](const Request& r) { return number_text(r.postscale); }, scope, &problems);
    } else if (requests.front().type == CollectiveType::kAddProcessSet) {
      check_property("member ranks", requests, [](const Request& r) { return shape_text(r.process_set_ranks); }, scope, &problems);
    } else if (requests.front().type == CollectiveType::kBroadcast) {
      auto root_text = [&](const Request& r) {
        if (r.root_rank >= 0) return std::to_string(scope.world_rank(r.root_rank));
        return std::to_string(r.named_root) +
               (scope.id == 0 ? " (outside 0.." + std::to_string(world_size - 1) + ")" : " (not a member)");
      };
      check_property("root rank", requests, root_text, scope, &problems);
      if (problems.empty() && requests.front().root_rank < 0) {
        problems.push_back("root rank " + std::to_string(requests.front().named_root) +
                           (scope.id == 0 ? " is outside 0.." + std::to_string(world_size - 1)
                                          : " is not a member of " + scope.describe()));
      }
    }
  }
  if (problems.empty()) return Status::ok();
  std::ostringstream out;
  out << "Mismatched " << collective_name(requests.front().type) << " of tensor '" << name << "'" << scope.in_text()
      << ": ";
  for (size_t i = 0; i < problems.size(); ++i) out << (i ? "; and " : "") << problems[i];
  return Status::invalid_argument(out.str());
}

}  // namespace chorus::detail
