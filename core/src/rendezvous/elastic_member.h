#pragma once
// This process as a member of an elastic job (docs/elastic.md), kept for
// the process's whole life across the worlds it takes part in. Each init()
// asks its rendezvous for a new world (join); in between, the rendezvous
// may say the hosts changed, which commit() reads without waiting
// (latest_notice). Two rendezvous behind one small interface:
// - chorusrun's (rendezvous/elastic_launcher_client.h), when the launcher
//   set CHORUS_ELASTIC_ADDR and CHORUS_ELASTIC_MEMBER;
// - etcd, without a launcher (rendezvous/etcd_rendezvous.h), with
//   CHORUS_RDZV_BACKEND=etcd, CHORUS_RDZV_ENDPOINT and CHORUS_RDZV_ID.
// The launcher's wins when both are set: its driver waits for its workers.

#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "net/tcp_handshake.h"
#include "rendezvous/elastic_wire.h"
#include "rendezvous/tcp_rendezvous.h"

namespace chorus::detail {

constexpr HandshakePurpose kElasticPurpose = HandshakePurpose::kElastic;

/// Where an elastic member gets its worlds.
class RendezvousClient {
 public:
  virtual ~RendezvousClient() = default;
  /// Asks for the next world and waits for it (`timeout_seconds` at least):
  /// `*world` gets its peers, key, job id and a listener of its own, `*rank`
  /// this process's rank. An error when the rendezvous says no world will
  /// form (it names why) or cannot be reached.
  virtual Status join(double timeout_seconds, TcpWorld* world, int* rank) = 0;
  /// The hosts' changes since this process's world formed, without waiting:
  /// the latest generation (0: none) and every kind of change since.
  virtual ElasticHostsNotice latest_notice() = 0;
  /// The process ends: leave the job at once rather than when the
  /// rendezvous notices (etcd: the lease is revoked).
  virtual void leave() {}
  /// This process's connections to these ranks of the world it last
  /// joined failed (their processes ended, or stopped answering): the
  /// rendezvous may count them gone at once rather than when it notices
  /// (etcd: their leases are revoked). chorusrun sees its workers end.
  virtual void lost_peers(const std::vector<int>& ranks) { (void)ranks; }
};

class ElasticMember {
 public:
  ElasticMember(std::string member_id, std::unique_ptr<RendezvousClient> client);
  /// A member of chorusrun's rendezvous at address:port.
  ElasticMember(std::string address, int port, std::string member_id, std::string job_id, TcpAuth auth);

  Status join(double timeout_seconds, TcpWorld* world, int* rank) {
    return client_->join(timeout_seconds, world, rank);
  }
  ElasticHostsNotice latest_notice() { return client_->latest_notice(); }
  void leave() { client_->leave(); }
  void lost_peers(const std::vector<int>& ranks) { client_->lost_peers(ranks); }
  const std::string& member_id() const { return member_id_; }

 private:
  const std::string member_id_;
  const std::unique_ptr<RendezvousClient> client_;
};

/// This process's membership, made on first use from the environment;
/// nullptr when neither CHORUS_ELASTIC_ADDR nor CHORUS_RDZV_BACKEND is set
/// (not an elastic job). An error in the variables is returned in `*status`.
ElasticMember* elastic_member(Status* status = nullptr);

/// Whether CHORUS_ELASTIC_ADDR or CHORUS_RDZV_BACKEND is set.
bool elastic_requested();

}  // namespace chorus::detail
