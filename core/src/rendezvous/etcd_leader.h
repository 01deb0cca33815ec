#pragma once
// The leader of an elastic job whose rendezvous is in etcd (rendezvous/
// etcd_rendezvous.h): the one member holding /chorus/<id>/leader runs the
// policy (rendezvous/elastic_world_formation.h) over the members' keys and
// writes what it decides. What chorusrun's rendezvous does over its
// connections (rendezvous/elastic_rendezvous.h), done over keys:
//
// - each round (every ~100 ms) it reads /chorus/<id>/members/*: a key is a
//   live member (it vanishes with its lease when the process dies); a member
//   waits for a world unless it is in the current world and has not asked
//   again (its value's "after" is older than the current world);
// - a world formed is written to /chorus/<id>/world; the failure (too few
//   members) to /chorus/<id>/failure; a newcomer while a world runs raises
//   the generation in /chorus/<id>/hosts; a late member's key is deleted (it
//   is left out; asking again, it comes back as a newcomer);
// - every write is a transaction that holds only while the leader key still
//   names this member, so a leader that lost its lease writes nothing;
// - a new leader starts from the keys: the world key is the current world,
//   the hosts key the generation.
// A first world (no member of the last one left) waits until no member
// came for a second, so that workers started together meet in one world.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "rendezvous/elastic_wire.h"
#include "rendezvous/elastic_world_formation.h"
#include "rendezvous/etcd_client.h"

namespace chorus::detail {

class EtcdLeader {
 public:
  /// `prefix`: the job's keys, "/chorus/<id>/"; `job`: its id.
  EtcdLeader(EtcdClient& client, std::string prefix, std::string job, std::string member_id,
             FormationSettings settings);

  /// Reads the current world and the hosts' generation.
  Status start(Deadline deadline);
  /// One round at time `now` (seconds). False when this member no longer
  /// leads or a write failed: the caller starts a new leader from the keys.
  bool step(double now, Deadline deadline);

 private:
  Status read_members(double now, Deadline deadline, std::set<std::string>* present);
  bool settling(double now, const std::set<std::string>& present);
  void form(const std::vector<std::string>& ids, std::vector<EtcdOp>* ops);
  bool write(const std::vector<EtcdOp>& ops, Deadline deadline);

  EtcdClient& client_;
  const std::string prefix_, job_, member_id_;
  const FormationSettings settings_;
  WorldFormation formation_;
  std::map<std::string, EtcdMemberValue> members_;  // the keys read this round
  std::set<std::string> tracked_;                   // the members the policy knows
  std::vector<std::string> world_;                  // the current world's ids, by rank
  int64_t version_ = 0;                             // its version
  int64_t generation_ = 0;                          // of the hosts key
  int kinds_ = 0;
  std::set<std::string> last_present_;  // a first world: who was there, since when
  double present_since_ = 0;
  bool failed_ = false;  // the failure was written: no world forms any more
};

}  // namespace chorus::detail
