// Cross-rank consistency checks of one tensor's requests: every row of
// kRequestFields (request_fields.h) with a mismatch text is compared.
#include <algorithm>
#include <map>
#include <optional>
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

// The text a refusing rank sent, less the "<collective> of tensor '<name>': "
// the error starts with anyway.
std::string refusal_reason(const Request& r) {
  const std::string prefix = std::string(collective_name(r.type)) + " of tensor '" + r.name + "': ";
  return r.refused.compare(0, prefix.size(), prefix) == 0 ? r.refused.substr(prefix.size()) : r.refused;
}

// Ranks that refused their call before negotiation (Request::refused), by
// reason: every rank's handle fails with this, the refusing ranks' too.
std::optional<Status> refusals(const std::string& name, const std::vector<Request>& requests, const SetScope& scope) {
  // Per tensor on the coordinator: nothing is built when nobody refused.
  if (std::none_of(requests.begin(), requests.end(), [](const Request& r) { return !r.refused.empty(); })) {
    return std::nullopt;
  }
  std::map<std::string, std::vector<int>> ranks_by_reason;
  std::vector<std::string> order;  // reasons in order of first (lowest) rank
  const Request* called = nullptr;  // a rank that called with good input: its collective names the call
  std::vector<const Request*> by_rank;
  for (const auto& r : requests) by_rank.push_back(&r);
  std::sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  for (const Request* r : by_rank) {
    if (r->refused.empty()) {
      if (called == nullptr) called = r;
      continue;
    }
    auto& ranks = ranks_by_reason[refusal_reason(*r)];
    if (ranks.empty()) order.push_back(refusal_reason(*r));
    ranks.push_back(scope.world_rank(r->rank));
  }
  const Request& named = called ? *called : *by_rank.front();
  std::ostringstream out;
  out << collective_name(named.type) << " of tensor '" << name << "'" << scope.in_text() << " refused on ";
  for (size_t i = 0; i < order.size(); ++i) out << (i ? "; on " : "") << rank_list(ranks_by_reason[order[i]]) << ": " << order[i];
  out << " (the call fails on every rank)";
  return Status::invalid_argument(out.str());
}

}  // namespace

Status validate_requests(const std::string& name, const std::vector<Request>& requests,
                         int world_size, const SetScope& scope) {
  if (std::optional<Status> refused = refusals(name, requests, scope)) return *refused;
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
