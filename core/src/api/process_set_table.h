#pragma once
// The process sets a Runtime knows, and the engine (Engine) that runs
// each one this rank is a member of.
//
// Design: a set is a complete engine of its own (queue, coordinator on its
// rank 0, response cache, background thread) over a backend split from the
// global one. Registration is itself a collective of the global set
// (CollectiveType::kAddProcessSet), so every rank numbers sets alike and
// splits its backend (MPI_Comm_split) at the same point of the global
// response order. Because each set's collectives are ordered by its own
// coordinator, two sets could order their blocking data-plane calls
// differently on two common members; one thread per set (with
// MPI_THREAD_MULTIPLE) is what keeps such overlapping sets from
// deadlocking, and lets disjoint sets run at the same time.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/process_set.h"
#include "engine/engine.h"

namespace chorus::detail {

class ProcessSetTable {
 public:
  /// Shuts down every set this rank is a member of.
  ~ProcessSetTable() { clear(); }

  /// The id the next registration gets: every rank registers in the same
  /// order, so ids agree.
  int32_t next_id();
  /// Records a registered set; `engine` is nullptr on non-members.
  void add(const ProcessSet& set, std::shared_ptr<Engine> engine);
  /// The engine for `set` on this rank (`global_rank`); throws
  /// InvalidArgumentError beginning with `what` when the set is unknown here
  /// or this rank is not a member.
  std::shared_ptr<Engine> engine(const ProcessSet& set, int global_rank, const std::string& what) const;
  /// The registered set with this id; throws InvalidArgumentError when unknown.
  ProcessSet find(int32_t id) const;
  /// Forgets the set and hands back its engine (nullptr on non-members) for
  /// the caller to shut down outside the lock; throws when unknown.
  std::shared_ptr<Engine> remove(const ProcessSet& set, const std::string& what);
  /// Registered sets, by id.
  std::vector<ProcessSet> list() const;
  /// The engines of the sets this rank is a member of, by set id.
  std::vector<std::pair<int32_t, std::shared_ptr<Engine>>> member_engines() const;
  /// Shuts down and forgets every set.
  void clear();

 private:
  struct Registered {
    ProcessSet set;
    std::shared_ptr<Engine> engine;  // nullptr: this rank is not a member
  };
  const Registered& lookup(int32_t id, const std::string& what) const;

  mutable std::mutex mu_;
  int32_t last_id_ = 0;
  std::map<int32_t, Registered> sets_;
};

}  // namespace chorus::detail
