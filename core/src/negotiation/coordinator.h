#pragma once
// The coordinator's message table (rank 0): counts requests per tensor name;
// once every rank submitted a name, checks that they agree and makes a
// Response (or an ERROR Response naming what differs and on which ranks).
// Pure logic, no communication: unit-tested directly.

#include <chrono>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "chorus/status.h"
#include "common/set_scope.h"
#include "negotiation/messages.h"

namespace chorus::detail {

/// A tensor every rank submitted, with the request that describes it.
struct ReadyTensor {
  Response response;
  Request request;  ///< rank 0's request (all agree unless response is an error)
};

/// A tensor that some ranks submitted and others have not, for too long.
struct StalledTensor {
  std::string name;
  std::vector<int> submitted_ranks;
  std::vector<int> missing_ranks;
  double waiting_seconds = 0;
  std::chrono::steady_clock::time_point first_seen;  ///< when the first rank submitted it
};

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;
  /// `scope` names the process set and its members' global ranks in messages.
  explicit Coordinator(int world_size, SetScope scope = {})
      : world_size_(world_size), scope_(std::move(scope)), joined_(static_cast<size_t>(world_size), false) {}

  /// Records one rank's request.
  void add(Request request, Clock::time_point now = Clock::now());
  /// Tensors that became complete since the last call, in completion order.
  /// Members of a group are held back until the whole group is complete,
  /// then returned together; a member that fails fails its group at once.
  std::vector<ReadyTensor> take_ready();
  /// Tensors waiting longer than `threshold_seconds` for some ranks.
  std::vector<StalledTensor> stalled(Clock::time_point now, double threshold_seconds) const;
  /// True when no tensor is waiting for any rank.
  bool idle() const { return table_.empty() && groups_.empty(); }
  /// Some rank has joined (and not every rank yet).
  bool any_joined() const { return joined_count_ > 0; }
  /// Some rank submitted `name` and the tensor is not complete.
  bool waiting_for(const std::string& name) const { return !table_.empty() && table_.count(name) > 0; }
  /// `name` failed this round with a group: another request for it (a cache
  /// bit too) must join that failure, not complete apart.
  bool failed_this_round(const std::string& name) const {
    return !failed_names_.empty() && failed_names_.count(name) > 0;
  }

 private:
  struct Entry {
    std::vector<Request> requests;  // in arrival order
    std::vector<bool> seen;         // by rank
    Clock::time_point first_seen;
  };
  struct PendingGroup {
    int32_t size = 0;
    std::vector<ReadyTensor> members;
  };

  ReadyTensor complete(const std::string& name, Entry& entry);
  void release_group(const std::string& group);
  // A member that fails fails its group at once (group_failure.cc).
  void fail_groups(const std::vector<std::string>& groups, ReadyTensor failing);
  void spread_failure(size_t failure, std::vector<std::string> groups);
  void list_failed(size_t failure, const std::string& name);
  bool joins_failure(const Request& request);
  /// Every rank submitted the tensor or has joined.
  bool covered(const Entry& entry) const;
  void finish(std::unordered_map<std::string, Entry>::iterator it);
  // Hands a completed (or failed) tensor on: to the ready list, its group, or
  // the failure of every group it belongs to. Erases it from the table.
  void deliver(std::unordered_map<std::string, Entry>::iterator it, ReadyTensor ready);
  // A collective that cannot run while a rank has joined fails at its first
  // request, not when every other rank sent it: ranks whose calls differ in
  // name (unnamed calls the joined rank never made) would wait for each other.
  bool fails_while_joined(std::unordered_map<std::string, Entry>::iterator it);
  void add_join(const Request& request);

  int world_size_;
  SetScope scope_;
  // Join: ranks out of data. Allreduces complete without them (they add
  // zeros); other collectives fail; when all joined, a join response.
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int32_t last_joined_ = -1;
  std::unordered_map<std::string, Entry> table_;
  std::vector<std::string> completed_;  // names complete this round, in order
  std::map<std::string, PendingGroup> groups_;
  // Groups and names failed this round, with their failure's place in
  // ready_: requests still arriving this round under them join it.
  std::unordered_map<std::string, size_t> failing_groups_;
  std::unordered_map<std::string, size_t> failed_names_;
  std::vector<ReadyTensor> ready_;
};

/// Checks that every rank's request for one tensor agrees. OK when they do,
/// else an invalid argument naming the tensor, each differing property with
/// its values, and the ranks that hold each value (global ranks, and the
/// set named, when `scope` is a process set).
Status validate_requests(const std::string& name, const std::vector<Request>& requests, int world_size,
                         const SetScope& scope = {});

}  // namespace chorus::detail
