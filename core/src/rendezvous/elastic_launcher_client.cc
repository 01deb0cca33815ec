// rendezvous/elastic_launcher_client.h: the connection to chorusrun's
// rendezvous and its messages.
#include "rendezvous/elastic_launcher_client.h"

#include <poll.h>

#include <algorithm>
#include <utility>

#include "net/tcp_wire.h"

namespace chorus::detail {

namespace {

constexpr uint32_t kMaxMessageBytes = 1u << 26;          // a world of many ranks fits
constexpr auto kMessageBound = std::chrono::seconds(5);  // the rest of a message that began to arrive

Clock::duration seconds_duration(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

LauncherRendezvousClient::LauncherRendezvousClient(std::string address, int port, std::string member_id,
                                                   std::string job_id, TcpAuth auth)
    : address_(std::move(address)),
      member_id_(std::move(member_id)),
      job_id_(std::move(job_id)),
      port_(port),
      auth_(std::move(auth)) {}

Status LauncherRendezvousClient::connect(Deadline deadline) {
  if (connection_.valid()) return Status::ok();
  if (!broken_.empty()) return Status::aborted(broken_);
  const std::string where = address_ + ":" + std::to_string(port_);
  Status s = connect_to(address_, port_, deadline, &connection_);
  bool refused = false;
  const HandshakeClaim claim{kElasticPurpose, 0, -1, 0, 0, job_id_};
  if (s.is_ok()) s = prove_connection(connection_.fd(), handshake_key(auth_.secret), claim, deadline, &refused);
  if (s.is_ok()) return s;
  connection_.reset();
  return Status::aborted("elastic member " + member_id_ + " could not reach the job's rendezvous at " + where +
                         " (CHORUS_ELASTIC_ADDR): " + s.message());
}

Status LauncherRendezvousClient::read_one(Deadline deadline, ElasticMessage* out) {
  std::string text;
  Status s = recv_text(connection_.fd(), kMaxMessageBytes, deadline, &text);
  if (s.is_ok()) s = decode_message(text, out);
  if (s.is_ok() || s.code() == StatusCode::kTimeout) return s;
  broken_ = "elastic member " + member_id_ + " lost the job's rendezvous (the launcher ended?): " + s.message();
  connection_.reset();
  return Status::aborted(broken_);
}

Status LauncherRendezvousClient::join(double timeout_seconds, TcpWorld* world, int* rank) {
  std::lock_guard<std::mutex> lock(mu_);
  const Deadline deadline = Clock::now() + seconds_duration(timeout_seconds);
  Status s = connect(deadline);
  TcpWorld w;
  int port = 0;
  if (s.is_ok()) s = listen_on("", 0, &w.listener, &port);
  if (s.is_ok()) s = send_text(connection_.fd(), encode_join({member_id_, this_host_id(), port}), deadline);
  while (s.is_ok()) {
    ElasticMessage m;
    s = read_one(deadline, &m);
    if (!s.is_ok()) break;
    if (m.kind == ElasticMessage::Kind::kHosts) continue;  // about the world this process already left
    if (m.kind == ElasticMessage::Kind::kError) return Status::aborted(m.error);
    notice_ = {};
    baseline_ = m.world.hosts_generation;
    w.peers = std::move(m.world.peers);
    w.key = m.world.key;
    w.job_id = m.world.job_id;
    *rank = m.world.rank;
    *world = std::move(w);
    return Status::ok();
  }
  if (s.code() == StatusCode::kTimeout) {
    return Status::timeout("elastic member " + member_id_ + ": no world formed within " +
                           std::to_string(timeout_seconds) + " s");
  }
  return s;
}

void LauncherRendezvousClient::read_arrived() {
  while (connection_.valid()) {
    pollfd p{connection_.fd(), POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return;
    ElasticMessage m;
    if (!read_one(Clock::now() + kMessageBound, &m).is_ok()) return;
    if (m.kind != ElasticMessage::Kind::kHosts || m.hosts.generation <= baseline_) continue;
    notice_.generation = std::max(notice_.generation, m.hosts.generation);
    notice_.kinds |= m.hosts.kinds;
  }
}

ElasticHostsNotice LauncherRendezvousClient::latest_notice() {
  std::lock_guard<std::mutex> lock(mu_);
  read_arrived();
  return notice_;
}

}  // namespace chorus::detail
