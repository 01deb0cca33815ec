#include "rendezvous/elastic_rendezvous.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "net/tcp_handshake.h"
#include "net/tcp_wire.h"
#include "rendezvous/elastic_member.h"
#include "rendezvous/tcp_peer_address.h"

namespace chorus::detail {

namespace {

constexpr auto kMessageBound = std::chrono::seconds(5);  // a member's message arrives whole at once

}  // namespace

ElasticRendezvous::ElasticRendezvous(ElasticRendezvousSettings settings)
    : settings_(std::move(settings)), formation_(settings_.formation) {}

Status ElasticRendezvous::start(ElasticRendezvousSettings settings, std::unique_ptr<ElasticRendezvous>* out) {
  std::unique_ptr<ElasticRendezvous> r(new ElasticRendezvous(std::move(settings)));
  Status s = listen_on("", 0, &r->listener_, &r->port_);
  if (!s.is_ok()) return s;
  r->acceptor_ = std::make_unique<HandshakeAcceptor>(r->listener_, r->settings_.auth, kElasticPurpose, 0, 0);
  *out = std::move(r);
  return Status::ok();
}

double ElasticRendezvous::now() const { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

void ElasticRendezvous::gone(const std::string& id) {
  formation_.gone(id);
  retired_.erase(std::remove(retired_.begin(), retired_.end(), id), retired_.end());
  active_.erase(std::remove(active_.begin(), active_.end(), id), active_.end());
  for (auto& c : connections_) {
    if (c->member_id == id) c->socket.reset();
  }
}

bool ElasticRendezvous::retire(const std::string& id) {
  if (std::find(active_.begin(), active_.end(), id) == active_.end()) return false;
  if (std::find(retired_.begin(), retired_.end(), id) == retired_.end()) retired_.push_back(id);
  return true;
}

void ElasticRendezvous::tell_active(const std::string& text) {
  const Deadline bound = Clock::now() + kMessageBound;
  for (auto& c : connections_) {
    if (!c->socket.valid() || c->member_id.empty()) continue;
    if (std::find(active_.begin(), active_.end(), c->member_id) == active_.end()) continue;
    send_text(c->socket.fd(), text, bound);  // a member that cannot hear it is gone: its close says so
  }
}

void ElasticRendezvous::hosts_changed(int kinds) {
  ++generation_;
  kinds_ |= kinds;
  tell_active(encode_hosts({generation_, kinds}));
}

void ElasticRendezvous::accept_new() {
  for (;;) {
    ProvenConnection proven;
    if (!acceptor_->next(Clock::now(), &proven).is_ok()) return;
    if (proven.claim.job_id != settings_.job_id) continue;  // proven, but of another job: closed
    auto c = std::make_unique<Connection>();
    c->address = proven.address;
    c->socket = std::move(proven.socket);
    connections_.push_back(std::move(c));
  }
}

void ElasticRendezvous::read_from(Connection& c, double now) {
  std::string text;
  ElasticJoin join;
  Status s = recv_text(c.socket.fd(), 4096, Clock::now() + kMessageBound, &text);
  if (s.is_ok()) s = decode_join(text, &join);
  if (!s.is_ok() || (!c.member_id.empty() && join.member_id != c.member_id)) {
    if (!c.member_id.empty()) gone(c.member_id);
    c.socket.reset();
    return;
  }
  c.member_id = join.member_id;
  c.join = join;
  auto retired = std::find(retired_.begin(), retired_.end(), join.member_id);
  if (retired != retired_.end()) {  // its step is done: it leaves, unanswered, in no world
    retired_.erase(retired);
    left_.push_back(join.member_id);
    formation_.gone(join.member_id);
    active_.erase(std::remove(active_.begin(), active_.end(), join.member_id), active_.end());
    return;
  }
  if (!formation_.is_member(join.member_id)) formation_.expect(join.member_id);  // started by hand
  active_.erase(std::remove(active_.begin(), active_.end(), join.member_id), active_.end());
  formation_.joined(join.member_id, now);
}

// Every member of the new world gets its rank and everyone's address; a
// member seen over loopback shares the launcher's host, so the others
// reach it at the launcher's address.
void ElasticRendezvous::form(const std::vector<std::string>& ids) {
  ElasticWorld world;
  world.version = formation_.worlds_formed();
  world.hosts_generation = generation_;
  world.job_id = settings_.job_id + "#" + std::to_string(world.version);
  Nonce random{};
  if (fresh_nonce(&random).is_ok()) {
    std::memcpy(&world.key, random.data(), sizeof world.key);
  } else {
    world.key = static_cast<uint64_t>(world.version);  // still one per world; the job id differs too
  }
  std::vector<Connection*> by_rank;
  for (const std::string& id : ids) {
    for (auto& c : connections_) {
      if (c->member_id == id && c->socket.valid()) by_rank.push_back(c.get());
    }
  }
  for (Connection* c : by_rank) {
    std::string address = c->address;
    if (is_loopback_address(address) && !is_loopback_address(settings_.address)) address = settings_.address;
    world.peers.push_back({c->join.host_id, address, c->join.port});
  }
  const Deadline bound = Clock::now() + kMessageBound;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    world.rank = static_cast<int>(r);
    send_text(by_rank[r]->socket.fd(), encode_world(world), bound);
  }
  active_ = ids;
  kinds_ = 0;
}

ElasticRendezvous::Events ElasticRendezvous::run_for(double seconds) {
  accept_new();
  std::vector<pollfd> fds;
  for (auto& c : connections_) fds.push_back({c->socket.fd(), POLLIN, 0});
  fds.push_back({listener_.fd(), POLLIN, 0});
  poll(fds.data(), fds.size(), static_cast<int>(seconds * 1000));
  const double t = now();
  for (size_t i = 0; i + 1 < fds.size(); ++i) {
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(*connections_[i], t);
  }
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [](const std::unique_ptr<Connection>& c) { return !c->socket.valid(); }),
                     connections_.end());
  accept_new();
  Events out;
  out.left = std::move(left_);
  left_.clear();
  if (failure_.empty()) {
    WorldFormation::Step step = formation_.step(t);
    if (step.interrupt) hosts_changed(kHostsAdded);
    if (!step.world.empty()) form(step.world);
    out.late = std::move(step.late);
    if (!step.failure.empty()) {
      failure_ = step.failure;
      const Deadline bound = Clock::now() + kMessageBound;
      for (auto& c : connections_) send_text(c->socket.fd(), encode_error(failure_), bound);
    }
  }
  out.failure = failure_;
  out.worlds_formed = formation_.worlds_formed();
  return out;
}

}  // namespace chorus::detail
