#pragma once
// This process as a member of an elastic job (docs/elastic.md): one
// connection to the job's rendezvous (the launcher's, comm/tcp/
// elastic_rendezvous.h), kept for the process's whole life across the
// worlds it takes part in. Each init() asks it for a new world (join); in
// between, the rendezvous may say the hosts changed, which commit() reads
// without waiting (latest_notice). Started by CHORUS_ELASTIC_ADDR
// (host:port) and CHORUS_ELASTIC_MEMBER (this process's id), which the
// launcher sets; the connection proves the job's secret like every other.

#include <memory>
#include <mutex>
#include <string>

#include "chorus/status.h"
#include "comm/tcp/elastic_wire.h"
#include "comm/tcp/tcp_handshake.h"
#include "comm/tcp/tcp_rendezvous.h"

namespace chorus::detail {

constexpr HandshakePurpose kElasticPurpose = HandshakePurpose::kElastic;

class ElasticMember {
 public:
  ElasticMember(std::string address, int port, std::string member_id, std::string job_id, TcpAuth auth);

  /// Asks for the next world and waits for it (`timeout_seconds` at most):
  /// `*world` gets its peers, key, job id and a listener of its own, `*rank`
  /// this process's rank. An error when the rendezvous says no world will
  /// form (it names why) or cannot be reached.
  Status join(double timeout_seconds, TcpWorld* world, int* rank);

  /// The hosts' changes since this process's world formed, reading what
  /// has arrived without waiting: the latest generation (0: none) and every
  /// kind of change since.
  ElasticHostsNotice latest_notice();

  const std::string& member_id() const { return member_id_; }

 private:
  Status connect(Deadline deadline);
  void read_arrived();  // mu_ held
  Status read_one(Deadline deadline, ElasticMessage* out);

  const std::string address_, member_id_, job_id_;
  const int port_;
  const TcpAuth auth_;
  std::mutex mu_;
  Socket connection_;
  std::string broken_;  // why the connection failed ("" while it works)
  ElasticHostsNotice notice_;
  int64_t baseline_ = 0;  // the generation the current world formed at
};

/// This process's membership, made on first use from the environment;
/// nullptr when CHORUS_ELASTIC_ADDR is not set (not an elastic job). An
/// error in the variables is returned in `*status`.
ElasticMember* elastic_member(Status* status = nullptr);

/// Whether CHORUS_ELASTIC_ADDR is set.
bool elastic_requested();

}  // namespace chorus::detail
