#include "negotiation/coordinator.h"

#include "common/rank_text.h"
#include "negotiation/collective_traits.h"

#include <algorithm>

namespace chorus::detail {

void Coordinator::add(Request request, Clock::time_point now) {
  if (request.rank < 0 || request.rank >= world_size_) return;  // not a rank of this job
  if (request.type == CollectiveType::kJoin) {
    add_join(request);
    return;
  }
  if (joins_failure(request)) return;
  auto [it, inserted] = table_.try_emplace(request.name);
  Entry& e = it->second;
  if (inserted) {
    e.seen.assign(static_cast<size_t>(world_size_), false);
    e.requests.reserve(static_cast<size_t>(world_size_));
    e.first_seen = now;
  }
  // A second request from the same rank still counts towards completion, so
  // that complete() reports it instead of the tensor waiting forever.
  e.seen[static_cast<size_t>(request.rank)] = true;
  e.requests.push_back(std::move(request));
  if (fails_while_joined(it)) return;
  if (covered(e)) finish(it);
}

bool Coordinator::fails_while_joined(std::unordered_map<std::string, Entry>::iterator it) {
  const Request& first = it->second.requests.front();
  if (joined_count_ == 0 || traits_of(first.type).runs_while_joined) return false;
  std::vector<int> joined;
  for (size_t r = 0; r < joined_.size(); ++r) {
    if (joined_[r]) joined.push_back(static_cast<int>(r));
  }
  ReadyTensor ready;
  ready.request = first;
  ready.response.names = {it->first};
  ready.response.type = ResponseType::kError;
  ready.response.error_message =
      std::string(collective_name(first.type)) + " of tensor '" + it->first + "' cannot run: rank(s) " +
      ranks_text(joined) + " called join(); until every rank joined, only allreduce runs (with zeros from the joined ranks)";
  deliver(it, std::move(ready));
  return true;
}

bool Coordinator::covered(const Entry& e) const {
  size_t count = e.requests.size();
  for (size_t r = 0; r < joined_.size(); ++r) count += joined_[r] && !e.seen[r];
  return static_cast<int>(count) >= world_size_;
}

void Coordinator::add_join(const Request& request) {
  const size_t r = static_cast<size_t>(request.rank);
  if (!joined_[r]) {
    joined_[r] = true;
    ++joined_count_;
  }
  last_joined_ = request.rank;
  // Tensors that waited only for this rank can go now, oldest first; a
  // waiting collective that cannot run beside a joined rank fails now, not
  // only once every other rank sent it: ranks whose unnamed calls differ
  // (the joined rank made none) would wait for each other for ever.
  // By name: finishing one may fail its group and erase others (fail_groups).
  std::vector<std::pair<Clock::time_point, std::string>> now_decided;
  for (const auto& [name, entry] : table_) {
    if (covered(entry) || !traits_of(entry.requests.front().type).runs_while_joined) {
      now_decided.emplace_back(entry.first_seen, name);
    }
  }
  std::sort(now_decided.begin(), now_decided.end());
  for (const auto& decided : now_decided) {
    auto it = table_.find(decided.second);
    if (it != table_.end() && !fails_while_joined(it)) finish(it);
  }
  if (joined_count_ < world_size_) return;
  ReadyTensor done;
  done.request = request;
  done.response.type = ResponseType::kJoin;
  done.response.names = {join_tensor_name()};
  done.response.last_joined_rank = last_joined_;
  ready_.push_back(std::move(done));
  joined_.assign(joined_.size(), false);
  joined_count_ = 0;
  last_joined_ = -1;
}

void Coordinator::finish(std::unordered_map<std::string, Entry>::iterator it) {
  deliver(it, complete(it->first, it->second));
}

void Coordinator::deliver(std::unordered_map<std::string, Entry>::iterator it, ReadyTensor ready) {
  if (ready.response.type == ResponseType::kError) {
    // Only now (complete() leaves the requests whole on an error): every
    // rank's group, which differ when the ranks grouped differently.
    std::vector<std::string> groups;
    for (const Request& r : it->second.requests) {
      if (!r.group.empty() && std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);
    }
    if (!groups.empty()) {
      table_.erase(it);
      fail_groups(groups, std::move(ready));
      return;
    }
  }
  table_.erase(it);
  const std::string group = ready.request.group;
  if (group.empty()) {
    ready_.push_back(std::move(ready));
    return;
  }
  PendingGroup& g = groups_[group];
  g.size = ready.request.group_size;
  g.members.push_back(std::move(ready));
  if (static_cast<int32_t>(g.members.size()) >= g.size) release_group(group);
}

ReadyTensor Coordinator::complete(const std::string& name, Entry& entry) {
  ReadyTensor out;
  Request* rank0 = &entry.requests.front();
  for (auto& r : entry.requests) {
    if (r.rank == 0) rank0 = &r;
  }
  out.response.names = {name};
  Status error;
  std::vector<int> absent_joined;  // joined ranks that did not submit this tensor
  for (size_t i = 0; i < entry.seen.size(); ++i) {
    if (!entry.seen[i] && joined_[i]) absent_joined.push_back(static_cast<int>(i));
  }
  const int expected = world_size_ - static_cast<int>(absent_joined.size());
  bool duplicate = static_cast<int>(entry.requests.size()) > expected;
  for (size_t i = 0; i < entry.seen.size(); ++i) duplicate |= !(entry.seen[i] || joined_[i]);
  if (duplicate) {
    error = Status::invalid_argument("Tensor '" + name + "' was submitted twice by one rank" + scope_.in_text() +
                                     " before it completed");
  } else {
    error = validate_requests(name, entry.requests, expected, scope_);
  }
  if (error.is_ok() && !absent_joined.empty() && !traits_of(rank0->type).runs_while_joined) {
    error = Status::invalid_argument(
        std::string(collective_name(rank0->type)) + " of tensor '" + name + "' cannot run: rank(s) " +
        ranks_text(absent_joined) +
        " called join(); until every rank joined, only allreduce runs (with zeros from the joined ranks)");
  } else if (error.is_ok() && !absent_joined.empty() && rank0->device_kind != DeviceKind::kCpu) {
    // A joined rank has no device of the tensor's to put its zeros on.
    error = Status::invalid_argument("allreduce of CUDA tensor '" + name + "' cannot run: rank(s) " +
                                     ranks_text(absent_joined) +
                                     " called join(); joined ranks take part in CPU allreduces only");
  }
  if (!error.is_ok()) {
    out.request = *rank0;
    out.response.type = ResponseType::kError;
    out.response.error_message = error.message();
    return out;
  }
  out.response.type = response_type_of(rank0->type);
  out.response.device_kind = rank0->device_kind;
  out.response.total_bytes = rank0->num_elements() * dtype_size(rank0->dtype);
  if (!absent_joined.empty()) out.response.joined_specs = {*rank0};  // the joined ranks add zeros of this shape
  if (rank0->type == CollectiveType::kAlltoall) {
    // Who sends how many rows to whom: every receiver needs its column.
    const size_t n = static_cast<size_t>(world_size_);
    out.response.splits.assign(n * n, 0);
    for (const Request& r : entry.requests) {
      for (size_t k = 0; k < n && k < r.splits.size(); ++k) out.response.splits[static_cast<size_t>(r.rank) * n + k] = r.splits[k];
    }
  }
  if (rank0->type == CollectiveType::kAllgather) {
    // Every rank's first dimension, in rank order: the output's layout.
    out.response.first_dims.assign(static_cast<size_t>(world_size_), 0);
    out.response.total_bytes = 0;
    for (const Request& r : entry.requests) {
      const int64_t first = r.shape.empty() ? 1 : r.shape.front();
      out.response.first_dims[static_cast<size_t>(r.rank)] = first;
      out.response.total_bytes += r.num_elements() * dtype_size(r.dtype);
    }
  }
  out.request = std::move(*rank0);  // last use: the entry is erased after this
  return out;
}

void Coordinator::release_group(const std::string& group) {
  auto it = groups_.find(group);
  for (auto& m : it->second.members) ready_.push_back(std::move(m));  // none failed: fail_groups() took those
  groups_.erase(it);
}

std::vector<ReadyTensor> Coordinator::take_ready() {
  if (!failed_names_.empty()) {  // the round's request lists are all in (group_failure.cc)
    failing_groups_.clear();
    failed_names_.clear();
  }
  if (ready_.empty()) return {};  // polled constantly: keep the capacity
  std::vector<ReadyTensor> out;
  out.swap(ready_);
  ready_.reserve(out.size());  // bursts tend to repeat (a backward pass): grow once, not per push
  return out;
}

std::vector<StalledTensor> Coordinator::stalled(Clock::time_point now, double threshold_seconds) const {
  std::vector<StalledTensor> out;
  for (const auto& [name, e] : table_) {
    const double waited = std::chrono::duration<double>(now - e.first_seen).count();
    if (waited < threshold_seconds) continue;
    StalledTensor s;
    s.name = name;
    s.waiting_seconds = waited;
    s.first_seen = e.first_seen;
    for (int r = 0; r < world_size_; ++r) {
      const bool in = e.seen[static_cast<size_t>(r)] || joined_[static_cast<size_t>(r)];
      (in ? s.submitted_ranks : s.missing_ranks).push_back(scope_.world_rank(r));
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace chorus::detail

// ---- Group failure ----
//
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
