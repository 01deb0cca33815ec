#pragma once
// An elastic job's rendezvous without a launcher: the members meet through
// etcd (docs/elastic.md, "Without chorusrun: etcd"), selected by
// CHORUS_RDZV_BACKEND=etcd with CHORUS_RDZV_ENDPOINT and CHORUS_RDZV_ID.
// Under /chorus/<id>/:
//
//   members/<member id>  this member's join, address and last world, under
//                        its lease (5 s, kept alive every second by a thread
//                        of its own): a dead member's key vanishes
//   leader               the member that runs the policy (rendezvous/
//                        etcd_leader.h), under its lease; created only if absent
//   world                the current world (members' ids and addresses by rank)
//   hosts                the generation of "the hosts changed" notices
//   failure              why no world will form (too few members)
//
// join() writes the member key and polls the world key (and the failure)
// until a world newer than this member's last one lists it. The hosts key is
// read by the thread twice a second, so latest_notice() (at every commit)
// never waits on etcd. Nothing in a training step needs etcd: while it is
// away the thread retries, and only joins wait for it. The job's secret is
// not in etcd: the mesh's connections prove it as in every TCP job.
//
// A member whose mesh lost ranks (lost_peers) has the thread revoke their
// leases at once: their keys (the leader's too) go now, not when the lease
// ends, and the next world forms without them (docs/elastic.md).

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rendezvous/elastic_member.h"
#include "rendezvous/elastic_world_formation.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_leader.h"

namespace chorus::detail {

struct EtcdRendezvousSettings {
  EtcdConnection connection;  // endpoints, TLS, user
  std::string job;            // CHORUS_RDZV_ID
  FormationSettings formation;
};

class EtcdRendezvous final : public RendezvousClient {
 public:
  EtcdRendezvous(EtcdRendezvousSettings settings, std::string member_id);
  ~EtcdRendezvous() override;

  /// Waits `timeout_seconds`, or CHORUS_ELASTIC_TIMEOUT and 10 s more when
  /// longer (the policy's own failure names the cause).
  Status join(double timeout_seconds, TcpWorld* world, int* rank) override;
  ElasticHostsNotice latest_notice() override;
  void leave() override;
  void lost_peers(const std::vector<int>& ranks) override;

 private:
  Status start(Deadline deadline);
  Status ask(int port, Deadline deadline, int64_t* asked_at);
  Status await(Deadline deadline, int64_t asked_at, ElasticWorld* world, std::vector<std::string>* ids);
  Status put_member(EtcdClient& client, Deadline deadline, int64_t* revision);
  void run();
  void keep_alive();
  void lead();
  void read_notice();
  void forget_lost();
  std::string key(const std::string& tail) const { return "/chorus/" + settings_.job + "/" + tail; }

  const EtcdRendezvousSettings settings_;
  const std::string member_id_;
  std::mutex join_mu_;  // one join at a time; joiner_ is its client
  EtcdClient joiner_;
  EtcdClient keeper_;  // the thread's client
  std::mutex put_mu_;  // the member key's writes, from either thread, in order
  std::mutex mu_;      // guards what follows
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t lease_ = 0;
  std::string value_;    // the member key's value ("" before the first join)
  int64_t version_ = 0;  // the last world this member was in
  bool in_world_ = false;
  std::vector<std::string> world_ids_;  // that world's members, by rank
  std::vector<std::string> lost_;       // members of it this one lost: their leases to revoke
  int64_t baseline_ = 0;  // the hosts' generation that world formed at
  ElasticHostsNotice notice_;
  std::unique_ptr<EtcdLeader> leader_;  // the thread's, while this member leads
  std::thread thread_;
  int owner_ = 0;  // the process that started the thread
};

/// CHORUS_RDZV_BACKEND=etcd and its variables: this process's member id
/// (host name, pid, a random part) and its client. An error names the
/// variable at fault.
Status etcd_client_from_environment(std::string* member_id, std::unique_ptr<RendezvousClient>* out);

}  // namespace chorus::detail
