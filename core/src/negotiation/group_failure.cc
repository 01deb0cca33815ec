// How a failed member fails its group at once (Coordinator, rank 0).
//
// Waiting for a failed group's other members would hang when the ranks
// grouped differently (say 3 tensors on one rank, 2 on another: the extra
// member never completes). So the failure takes every member any rank
// submitted, and spreads: a failed entry's requests name their ranks' groups,
// whose members fail too. A rank's members reach rank 0 in one request list
// (the queue adds and drains a group at once; grouped requests never travel
// as cache bits), so the members still to come arrive this round; they join
// the same failure (joins_failure). Each name is listed once per round: a
// name failed twice in one response list could fail that rank's next call
// under it (the first failure wakes the caller, who may enqueue it again).
// Not covered: a rank that sends a failed member only in a later round, in
// another group of its own (ranks that bucket the same tensors differently):
// its request then waits for the other ranks' next call under that name
// (the stall check names it), or fails with that call's failure.
#include <algorithm>

#include "negotiation/collective_traits.h"
#include "negotiation/coordinator.h"

namespace chorus::detail {

void Coordinator::fail_groups(const std::vector<std::string>& groups, ReadyTensor failing) {
  // Rank 0's group names the failure, whatever order the requests came in.
  const std::string& group = failing.request.group.empty() ? groups.front() : failing.request.group;
  ReadyTensor failed;
  failed.request = failing.request;
  failed.response.type = ResponseType::kError;
  failed.response.error_message = "Grouped " + std::string(collective_name(failing.request.type)) + " '" + group +
                                  "' failed: " + failing.response.error_message;
  const size_t index = ready_.size();
  ready_.push_back(std::move(failed));
  spread_failure(index, groups);
  list_failed(index, failing.response.names.front());
}

// Fails every member of `groups` (those complete and held back, and those
// still waiting for ranks), and of the groups those members' other requests
// name, until no new group turns up.
void Coordinator::spread_failure(size_t failure, std::vector<std::string> groups) {
  while (!groups.empty()) {
    const std::string group = std::move(groups.back());
    groups.pop_back();
    if (group.empty() || !failing_groups_.emplace(group, failure).second) continue;
    auto pending = groups_.find(group);
    if (pending != groups_.end()) {
      for (const ReadyTensor& m : pending->second.members) list_failed(failure, m.response.names.front());
      groups_.erase(pending);
    }
    std::vector<std::string> members;
    for (const auto& [name, entry] : table_) {
      for (const Request& r : entry.requests) {
        if (r.group != group) continue;
        members.push_back(name);
        break;
      }
    }
    std::sort(members.begin(), members.end());  // the table's order is a hash's: list them stably
    for (const std::string& name : members) {
      auto it = table_.find(name);
      for (const Request& r : it->second.requests) groups.push_back(r.group);
      table_.erase(it);
      list_failed(failure, name);
    }
  }
}

void Coordinator::list_failed(size_t failure, const std::string& name) {
  if (failed_names_.emplace(name, failure).second) ready_[failure].response.names.push_back(name);
}

// A request arriving this round under a name or group that failed this
// round joins that failure (with whatever other ranks submitted under it).
bool Coordinator::joins_failure(const Request& request) {
  if (failed_names_.empty()) return false;  // failing_groups_ is empty then too
  auto by_name = failed_names_.find(request.name);
  auto by_group = request.group.empty() ? failing_groups_.end() : failing_groups_.find(request.group);
  if (by_name == failed_names_.end() && by_group == failing_groups_.end()) return false;
  const size_t failure = by_name != failed_names_.end() ? by_name->second : by_group->second;
  std::vector<std::string> groups = {request.group};
  auto waiting = table_.find(request.name);
  if (waiting != table_.end()) {
    for (const Request& r : waiting->second.requests) groups.push_back(r.group);
    table_.erase(waiting);
  }
  list_failed(failure, request.name);
  spread_failure(failure, std::move(groups));
  return true;
}

}  // namespace chorus::detail
