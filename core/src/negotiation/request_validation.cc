// Cross-rank consistency checks of one tensor's requests: every row of
// kRequestFields (request_fields.h) with a mismatch text is compared.
#include <algorithm>
#include <map>
#include <sstream>
#include <type_traits>

#include "common/rank_text.h"
#include "negotiation/collective_traits.h"
#include "negotiation/coordinator.h"
#include "negotiation/request_fields.h"

namespace chorus::detail {

namespace {

// Groups the ranks by the value the row shows for their request; reports
// the property when more than one value occurs.
void check_property(const char* property, const std::vector<const Request*>& by_rank, const Mismatch& mismatch,
                    const MismatchContext& context, std::vector<std::string>* problems) {
  std::map<std::string, std::vector<int>> ranks_by_value;
  std::vector<std::string> order;  // values in order of first (lowest) rank
  for (const Request* r : by_rank) {
    std::string v = mismatch.shown(*r, context);
    auto& ranks = ranks_by_value[v];
    if (ranks.empty()) order.push_back(v);
    ranks.push_back(context.scope.world_rank(r->rank));
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

// Each row's mismatch, in row order. The collective comes first and decides
// what the other rows mean: they are compared only when it and the count
// of requests agree.
std::vector<std::string> mismatched_rows(const std::vector<Request>& requests, const MismatchContext& context) {
  std::vector<std::string> problems;
  if (static_cast<int>(requests.size()) != context.world_size) {
    problems.push_back("expected one request per rank, got " + std::to_string(requests.size()));
  }
  std::vector<const Request*> by_rank;
  for (const auto& r : requests) by_rank.push_back(&r);
  std::sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  const CollectiveType type = requests.front().type;
  bool comparable = true;
  for_each_request_field([&](const auto& f) {
    const Mismatch& m = f.mismatch;
    if (!comparable || m.property == nullptr || (m.compared != nullptr && !m.compared(type))) return;
    std::string property = m.property;
    if (f.agreement == Agreement::kSameAfterFirst && traits_of(type).first_dim_varies) {
      property += " after the first dimension";
    }
    check_property(property.c_str(), by_rank, m, context, &problems);
    if constexpr (std::is_same_v<typename std::decay_t<decltype(f)>::Type, CollectiveType>) {
      comparable = problems.empty();
    }
  });
  return problems;
}

}  // namespace

Status validate_requests(const std::string& name, const std::vector<Request>& requests,
                         int world_size, const SetScope& scope) {
  if (static_cast<int>(requests.size()) == world_size && all_agree(requests)) {
    const Request& r = requests.front();
    if (r.type != CollectiveType::kBroadcast || r.root_rank >= 0) return Status::ok();
  }
  std::vector<std::string> problems = mismatched_rows(requests, {scope, world_size});
  const Request& front = requests.front();
  if (problems.empty() && front.type == CollectiveType::kBroadcast && front.root_rank < 0) {
    problems.push_back("root rank " + std::to_string(front.named_root) +
                       (scope.id == 0 ? " is outside 0.." + std::to_string(world_size - 1)
                                      : " is not a member of " + scope.describe()));
  }
  if (problems.empty()) return Status::ok();
  std::ostringstream out;
  out << "Mismatched " << collective_name(front.type) << " of tensor '" << name << "'" << scope.in_text() << ": ";
  for (size_t i = 0; i < problems.size(); ++i) out << (i ? "; and " : "") << problems[i];
  return Status::invalid_argument(out.str());
}

}  // namespace chorus::detail
