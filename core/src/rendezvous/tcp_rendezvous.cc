#include "rendezvous/tcp_rendezvous.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/env_params.h"
#include "common/rank_text.h"
#include "net/tcp_acceptor.h"
#include "net/tcp_wire.h"
#include "rendezvous/tcp_peer_address.h"

namespace chorus::detail {

namespace {

constexpr auto kHelloBound = std::chrono::seconds(5);  // a proven rank's hello comes at once
constexpr auto kRetryPause = std::chrono::milliseconds(20);

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

RendezvousHello hello_of(const TcpJobSpec& spec, int port) {
  return {spec.rank, spec.size, port, spec.job_id, this_host_id()};
}

// The outcome of rank 0's accepting: the ranks that came, and what went wrong.
struct Arrivals {
  std::vector<Socket> links;
  std::vector<Socket> refused;  // told the error, then dropped
  std::vector<TcpPeerInfo> peers;
  std::string error;
};

// One proven connection to rank 0: a rank of this job, or an error for all
// (its claim clashes), or one to drop (its hello breaks off).
void admit(const TcpJobSpec& spec, ProvenConnection proven, Arrivals* a) {
  Socket connection = std::move(proven.socket);
  std::string text;
  RendezvousHello h;
  const Deadline bound = Clock::now() + kHelloBound;
  if (!recv_text(connection.fd(), 4096, bound, &text).is_ok() || !decode_rendezvous_hello(text, &h).is_ok()) return;
  // What it proved, not what its text says.
  h.rank = proven.claim.from;
  h.size = proven.claim.size;
  h.job_id = proven.claim.job_id;
  const std::string who = "a process at " + peer_address(connection.fd()) + " claiming rank " + std::to_string(h.rank);
  if (h.job_id != spec.job_id) {
    send_text(connection.fd(),
              encode_rendezvous_error(who + " belongs to job '" + h.job_id + "', but rank 0 at port " +
                                      std::to_string(spec.master_port) + " runs job '" + spec.job_id + "'"),
              bound);
    return;
  }
  if (h.size != spec.size) {
    a->error = who + " says the job has " + std::to_string(h.size) + " ranks, rank 0 says " + std::to_string(spec.size);
  } else if (h.rank <= 0 || h.rank >= spec.size) {
    a->error = who + ": ranks other than 0 are 1.." + std::to_string(spec.size - 1);
  } else if (a->links[static_cast<size_t>(h.rank)].valid()) {
    a->error = "rank " + std::to_string(h.rank) + " was claimed twice (by processes at " +
               a->peers[static_cast<size_t>(h.rank)].address + " and " + peer_address(connection.fd()) +
               "): check RANK / CHORUS_RANK of each process";
  }
  std::string address;
  if (a->error.empty()) {
    Status s = address_to_record(h.rank, peer_address(connection.fd()), h.host_id, a->peers[0].host_id,
                                 spec.master_addr, &address);
    if (!s.is_ok()) a->error = s.message();
  }
  if (!a->error.empty()) {
    a->refused.push_back(std::move(connection));
    return;
  }
  a->peers[static_cast<size_t>(h.rank)] = {h.host_id, address, h.port};
  a->links[static_cast<size_t>(h.rank)] = std::move(connection);
}

std::string missing_ranks(const Arrivals& a) {
  std::vector<int> missing;
  for (size_t r = 1; r < a.links.size(); ++r) {
    if (!a.links[r].valid()) missing.push_back(static_cast<int>(r));
  }
  return rank_list(missing) + " never came (" + std::to_string(a.links.size() - missing.size()) + " of " +
         std::to_string(a.links.size()) + " ranks arrived)";
}

Status serve(const TcpJobSpec& spec, double timeout_seconds, Deadline deadline, const TcpAuth& auth, TcpWorld* world) {
  Socket master;
  int bound_port = 0;
  Status s = listen_on("", spec.master_port, &master, &bound_port);
  if (!s.is_ok()) return Status::precondition_error("rank 0 (" + spec.port_var + "): " + s.message());
  Arrivals a;
  a.links.resize(static_cast<size_t>(spec.size));
  a.peers.resize(static_cast<size_t>(spec.size));
  a.peers[0] = {this_host_id(), spec.master_addr, world->peers.empty() ? 0 : world->peers[0].port};
  HandshakeAcceptor acceptor(master, auth, HandshakePurpose::kRendezvous, 0, 0);
  int came = 1;
  while (came < spec.size && a.error.empty()) {
    ProvenConnection connection;
    s = acceptor.next(deadline, &connection);
    if (s.code() == StatusCode::kTimeout) {
      a.error = "the rendezvous at port " + std::to_string(spec.master_port) + " timed out after " +
                seconds_text(timeout_seconds) + " (CHORUS_RENDEZVOUS_TIMEOUT_SECONDS): " + missing_ranks(a);
      break;
    }
    if (!s.is_ok()) return s;
    admit(spec, std::move(connection), &a);
    came = 1;
    for (const Socket& l : a.links) came += l.valid() ? 1 : 0;
  }
  if (!a.error.empty()) {
    const Deadline bound = Clock::now() + kHelloBound;
    for (const Socket& l : a.links) {
      if (l.valid()) send_text(l.fd(), encode_rendezvous_error(a.error), bound);
    }
    for (const Socket& l : a.refused) send_text(l.fd(), encode_rendezvous_error(a.error), bound);
    return Status::aborted(a.error);
  }
  Nonce random{};
  s = fresh_nonce(&random);
  if (!s.is_ok()) return s;
  std::memcpy(&world->key, random.data(), sizeof world->key);
  const std::string text = encode_rendezvous_world(a.peers, world->key);
  for (const Socket& l : a.links) {
    if (l.valid()) send_text(l.fd(), text, deadline + kHelloBound);
  }
  world->peers = std::move(a.peers);
  world->links = std::move(a.links);
  return Status::ok();
}

Clock::duration seconds_duration(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Connects to host:port and proves `claim` there, connecting again while
// the other end closes before it judged (not listening yet, too busy).
Status connect_and_prove(const std::string& host, int port, const TcpAuth& auth, const HandshakeClaim& claim,
                         Deadline deadline, Socket* out) {
  const std::string key = handshake_key(auth.secret);
  for (;;) {
    Status s = connect_to(host, port, deadline, out);
    if (!s.is_ok()) return s;
    bool refused = false;
    s = prove_connection(out->fd(), key, claim, deadline, &refused);
    if (s.is_ok() || refused || Clock::now() >= deadline) return s;
    out->reset();
    std::this_thread::sleep_for(kRetryPause);
  }
}

Status join(const TcpJobSpec& spec, double timeout_seconds, Deadline deadline, int own_port, const TcpAuth& auth,
            TcpWorld* world) {
  const Clock::duration timeout = seconds_duration(timeout_seconds);
  const std::string rank0 = spec.master_addr + ":" + std::to_string(spec.master_port);
  Socket link;
  const HandshakeClaim claim{HandshakePurpose::kRendezvous, spec.size, spec.rank, 0, 0, spec.job_id};
  Status s = connect_and_prove(spec.master_addr, spec.master_port, auth, claim, deadline, &link);
  if (s.code() == StatusCode::kPreconditionError) {  // judged by rank 0
    return Status::aborted("rank " + std::to_string(spec.rank) + " reached rank 0 at " + rank0 + ", but " +
                           s.message());
  }
  if (!s.is_ok()) {
    return Status::aborted("rank " + std::to_string(spec.rank) + " could not reach rank 0 at " + rank0 + " (" +
                           spec.addr_var + ", " + spec.port_var + ") within " + seconds_text(timeout_seconds) +
                           ": " + s.message());
  }
  // Rank 0 was listening when this rank connected, so it answers within its
  // own timeout from then at the latest (however late this rank started).
  const Deadline reply_by = Clock::now() + timeout + kHelloBound;
  s = send_text(link.fd(), encode_rendezvous_hello(hello_of(spec, own_port)), reply_by);
  std::string reply;
  if (s.is_ok()) s = recv_text(link.fd(), 1 << 26, reply_by, &reply);
  if (!s.is_ok()) {
    return Status::aborted("rank " + std::to_string(spec.rank) + " reached rank 0 at " + rank0 +
                           " but the rendezvous did not complete: " + s.message());
  }
  s = decode_rendezvous_world(reply, spec.size, &world->key, &world->peers);
  if (!s.is_ok()) return s;
  world->links.resize(static_cast<size_t>(spec.size));
  world->links[0] = std::move(link);
  return Status::ok();
}

}  // namespace

std::string this_host_id() {
  if (auto id = read_env("HOST_ID")) return *id;
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return std::string(name) + "/" + boot;
}

Status tcp_rendezvous(const TcpJobSpec& spec, double timeout_seconds, TcpWorld* out, const TcpAuth& auth) {
  const Deadline deadline = Clock::now() + seconds_duration(timeout_seconds);
  TcpWorld world;
  world.job_id = spec.job_id;
  int own_port = 0;
  Status s = listen_on("", 0, &world.listener, &own_port);
  if (!s.is_ok()) return s;
  if (spec.rank == 0) {
    world.peers.push_back({this_host_id(), spec.master_addr, own_port});
    s = serve(spec, timeout_seconds, deadline, auth, &world);
  } else {
    s = join(spec, timeout_seconds, deadline, own_port, auth, &world);
  }
  // The mesh gets its own bound from when the world was agreed: a rank that
  // arrived just before the rendezvous deadline still has time to connect.
  const Deadline mesh_deadline = Clock::now() + seconds_duration(timeout_seconds);
  if (s.is_ok()) s = connect_mesh(spec.rank, world, auth, mesh_deadline, &world.links);
  if (!s.is_ok()) return s;
  *out = std::move(world);
  return Status::ok();
}

Status connect_mesh(int rank, const TcpWorld& world, const TcpAuth& auth, Deadline deadline,
                    std::vector<Socket>* links) {
  const std::vector<TcpPeerInfo>& peers = world.peers;
  const auto size = static_cast<int32_t>(peers.size());
  links->resize(peers.size());
  for (int i = 0; i < rank; ++i) {
    Socket& l = (*links)[static_cast<size_t>(i)];
    if (l.valid()) continue;
    const TcpPeerInfo& p = peers[static_cast<size_t>(i)];
    const HandshakeClaim claim{HandshakePurpose::kMesh, size, rank, i, world.key, world.job_id};
    Status s = connect_and_prove(p.address, p.port, auth, claim, deadline, &l);
    if (!s.is_ok()) {
      return Status::aborted("rank " + std::to_string(rank) + " could not connect to rank " + std::to_string(i) +
                             " at " + p.address + ":" + std::to_string(p.port) + ": " + s.message());
    }
  }
  auto missing = [&] {
    std::vector<int> out;
    for (size_t j = static_cast<size_t>(rank) + 1; j < peers.size(); ++j) {
      if (!(*links)[j].valid()) out.push_back(static_cast<int>(j));
    }
    return out;
  };
  HandshakeAcceptor acceptor(world.listener, auth, HandshakePurpose::kMesh, rank, world.key);
  for (std::vector<int> left = missing(); !left.empty(); left = missing()) {
    ProvenConnection c;
    Status s = acceptor.next(deadline, &c);
    if (!s.is_ok()) {
      return Status::aborted("rank " + std::to_string(rank) + ": " + rank_list(left) +
                             " never connected to it (" + s.message() + ")");
    }
    const int from = c.claim.from;
    // Proven, so a rank of this job: a clash is a bug, not a stranger; the first stays.
    if (c.claim.size != size || c.claim.job_id != world.job_id || from <= rank || from >= size) continue;
    if ((*links)[static_cast<size_t>(from)].valid()) continue;
    (*links)[static_cast<size_t>(from)] = std::move(c.socket);
  }
  return Status::ok();
}

}  // namespace chorus::detail
