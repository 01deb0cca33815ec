#pragma once
/// \file process_set.h
/// ProcessSet: a subset of the job's ranks that runs collectives of its own,
/// negotiated among its members only. The default-constructed set is the
/// global one (id 0, every rank). Sets are registered by every rank with
/// Runtime::add_process_set and chosen per operation through OpHooks.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "chorus/export.h"

namespace chorus {

class CHORUS_API ProcessSet {
 public:
  /// The global set: every rank.
  ProcessSet() = default;
  /// A registered set; made by Runtime::add_process_set.
  ProcessSet(int32_t id, std::vector<int> ranks) : id_(id), ranks_(std::move(ranks)) {}

  /// 0 for the global set; registered sets count up from 1 in registration order.
  int32_t id() const { return id_; }
  bool is_global() const { return id_ == 0; }
  /// The members' global ranks, ascending (empty for the global set).
  const std::vector<int>& ranks() const { return ranks_; }
  /// The rank inside this set of global rank `global_rank`, or -1 when it is
  /// not a member (the global set: `global_rank` itself).
  int rank_of(int global_rank) const {
    if (is_global()) return global_rank;
    auto it = std::lower_bound(ranks_.begin(), ranks_.end(), global_rank);
    return it != ranks_.end() && *it == global_rank ? static_cast<int>(it - ranks_.begin()) : -1;
  }
  /// Horovod's ProcessSet.size(), .rank() and .included(), for this process
  /// in the process-wide runtime (chorus::init()); each throws
  /// PreconditionError before init(), as chorus::rank() does.
  /// The number of members (the global set: chorus::size()).
  int size() const;
  /// This process's rank in the set, or -1 when it is not a member.
  int rank() const;
  /// Whether this process is a member.
  bool included() const { return rank() >= 0; }
  bool operator==(const ProcessSet& o) const { return id_ == o.id_; }

 private:
  int32_t id_ = 0;
  std::vector<int> ranks_;
};

}  // namespace chorus
