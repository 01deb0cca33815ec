#pragma once
// An elastic member's rendezvous when chorusrun holds it (rendezvous/
// elastic_rendezvous.h): one connection, kept for the process's whole life,
// that proves the job's secret like every other; join sends a join message
// and reads the world, latest_notice reads the hosts messages that arrived
// without waiting. Started by CHORUS_ELASTIC_ADDR (host:port) and
// CHORUS_ELASTIC_MEMBER (this process's id), which the launcher sets.

#include <mutex>
#include <string>

#include "rendezvous/elastic_member.h"

namespace chorus::detail {

class LauncherRendezvousClient final : public RendezvousClient {
 public:
  LauncherRendezvousClient(std::string address, int port, std::string member_id, std::string job_id, TcpAuth auth);

  Status join(double timeout_seconds, TcpWorld* world, int* rank) override;
  ElasticHostsNotice latest_notice() override;

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

}  // namespace chorus::detail
