#pragma once
// When an elastic job's rendezvous forms a new world, and with whom: the
// policy alone (no sockets, time passed in), so every case is a unit test
// (test/rendezvous/test_elastic_rendezvous.cc). Members are processes named
// by the launcher; each is starting (started, never asked for a world yet),
// waiting (asked for a new world) or active (in the current world).
//
// - A world forms when some member waits, none of the current world's
//   members is still active (each failed or was interrupted and asked
//   again, or is gone), and at least min_np wait. The first world also
//   waits for every member the launcher started.
// - Ranks: the current world's members keep their order (so rank 0 is the
//   lowest surviving rank: it holds the committed state), newcomers follow
//   in the order the launcher started them (its host order; a member
//   started by hand: when it first asked).
// - A newcomer waiting while a world runs: the world's members are told the
//   hosts changed (interrupt), once per newcomer round; they finish their
//   step and ask again at their next commit().
// - A member of the current world that stays active join_grace seconds
//   after another of them asked again is late (stopped or stuck): the
//   launcher stops it.
// - Fewer than min_np waiting for elastic_timeout seconds: the job fails.

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace chorus::detail {

struct FormationSettings {
  int min_np = 1;
  int max_np = std::numeric_limits<int>::max();
  double join_grace_seconds = 10.0;
  double elastic_timeout_seconds = 600.0;
  // How the failure names the two settings: chorusrun's flags, or the
  // variables of a job without a launcher.
  std::string min_np_name = "--min-np";
  std::string timeout_name = "--elastic-timeout";
};

class WorldFormation {
 public:
  explicit WorldFormation(FormationSettings settings) : settings_(settings) {}

  /// The launcher started member `id`.
  void expect(const std::string& id);
  /// Member `id` asked for a new world.
  void joined(const std::string& id, double now);
  /// Member `id` ended (its process exited, or its connection closed).
  void gone(const std::string& id);
  /// A rendezvous taken over (etcd: a new leader): world `version` is the
  /// current one, `ids` its members in rank order, all active.
  void adopt(int64_t version, const std::vector<std::string>& ids);

  struct Step {
    std::vector<std::string> world;  ///< non-empty: form it (ids in rank order)
    std::vector<std::string> late;   ///< members to stop (did not ask again in time)
    bool interrupt = false;          ///< tell the active members the hosts changed
    std::string failure;             ///< non-empty: no world can form; why
  };
  /// What to do now.
  Step step(double now);

  int64_t worlds_formed() const { return version_; }
  bool is_member(const std::string& id) const { return members_.count(id) > 0; }
  /// Member `id` asked for a world at least once (it reached the rendezvous).
  bool has_asked(const std::string& id) const {
    auto it = members_.find(id);
    return it != members_.end() && it->second.state != State::kStarting;
  }

 private:
  enum class State { kStarting, kWaiting, kActive };
  struct Member {
    State state = State::kStarting;
    int rank = -1;          // in the current world; -1: a newcomer
    double asked_at = 0.0;  // when it last asked for a world
  };

  int waiting_count() const;
  bool newcomers_only_waiting() const;
  double first_rejoin(double now) const;
  Step form();

  const FormationSettings settings_;
  std::map<std::string, Member> members_;
  int64_t version_ = 0;
  bool interrupted_ = false;     // this round's members were told
  double below_min_since_ = -1;  // when the waiting members last fell below min_np
  int64_t start_order_ = 0;
  std::map<std::string, int64_t> order_;  // when each was started (or first asked), for newcomers' ranks
};

}  // namespace chorus::detail
