#include "comm/tcp/tcp_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "comm/settings_check.h"
#include "comm/shm/shared_memory_start.h"
#include "comm/shm/shm_control_channel.h"
#include "comm/tcp/tcp_collectives.h"
#include "comm/tcp/tcp_control_channel.h"
#include "comm/tcp/tcp_peer_link.h"
#include "common/env_params.h"
#include "common/logging.h"
#include "rendezvous/elastic_member.h"
#include "rendezvous/tcp_rendezvous.h"
#include "rendezvous/tcp_secret.h"

namespace chorus::detail {

namespace {

constexpr int kPeerLostExitCode = 1;
// A survivor of an elastic job resets soon after a rank hangs (docs/elastic.md).
constexpr double kHeartbeatTimeoutSeconds = 30;  // the registry's default (CHORUS_HEARTBEAT_TIMEOUT_SECONDS)
constexpr double kElasticHeartbeatTimeoutSeconds = 10;

class TcpBackend final : public Backend {
 public:
  TcpBackend(const RuntimeOptions& options, std::optional<TcpMeeting> meeting)
      : options_(options), meeting_(std::move(meeting)) {}
  // A process set's: its members' mesh, already connected.
  TcpBackend(const RuntimeOptions& options, TcpWorld world, int rank, SetScope scope, TcpAuth auth)
      : options_(options),
        world_(std::move(world)),
        rank_(rank),
        scope_(std::move(scope)),
        connected_(true),
        auth_(std::move(auth)) {}

  Status start() override {
    if (!connected_) {
      Status s = meet();
      if (!s.is_ok()) return s;
    }
    topo_ = topology_of(rank_, world_.peers);
    topo_.scope = scope_;
    double heartbeat = 0;  // a split's mesh: off
    if (!connected_) {
      Status s = heartbeat_timeout(&heartbeat);
      if (!s.is_ok()) return s;
    }
    mesh_ = std::make_unique<TcpMesh>(rank_, std::move(world_.links), options_.peer_timeout_seconds);
    mesh_->watch_liveness(heartbeat);
    socket_control_ = std::make_unique<TcpControlChannel>(*mesh_);
    collectives_ = std::make_unique<TcpCollectives>(*mesh_);
    link_ = std::make_unique<TcpPeerLink>(*mesh_);
    Status s = check_settings_agree(*collectives_, topo_.size, options_, true);
    // Every rank reaches the same verdict: they leave together (a close
    // frame to each, then wait for everyone's), or the first to go would
    // break the others' last exchanges of the check, and they would report
    // its loss instead of the settings.
    if (!s.is_ok() && mesh_->failure().is_ok()) {
      mesh_->close(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::duration<double>(options_.peer_timeout_seconds)));
    }
    if (s.is_ok()) s = start_host_shared_memory(*collectives_, topo_, options_, &shared_memory_);
    if (s.is_ok()) s = start_shm_control();
    if (!s.is_ok()) stop();
    if (shared_memory_) shared_memory_->set_while_waiting([this] { end_if_peer_lost(); });
    return s;
  }

  void stop() override {
    tell_rendezvous_of_losses();
    shared_memory_.reset();
    link_.reset();
    collectives_.reset();
    shm_control_.reset();
    socket_control_.reset();
    mesh_.reset();  // closes the connections
    world_.listener.reset();
  }

  // Ending this process closes its connections: every other rank notices at
  // once and stops with an error naming this rank. A member of an elastic
  // job lives on instead: its runtime has stopped, its handles failed, and
  // it may join the next world (docs/elastic.md).
  bool outlives_job_end() const override { return elastic_; }
  void end_job(int exit_code) override {
    if (elastic_) return;
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_code);
  }

  Topology topology() const override { return topo_; }
  ControlChannel& control() override {
    return shm_control_ ? *shm_control_ : static_cast<ControlChannel&>(*socket_control_);
  }
  Communicator& collectives() override { return *collectives_; }
  PeerLink& peer_link() override { return *link_; }
  const SharedSlots* shared_slots() const override { return shared_memory_ ? &shared_memory_->slots() : nullptr; }
  std::shared_ptr<SharedArena> shared_arena() const override {
    return shared_memory_ ? shared_memory_->arena() : nullptr;
  }
  Status split(int32_t set_id, const std::vector<int>& members, std::unique_ptr<Backend>* out) override;

 private:
  Status meet() {
    Status made;
    if (ElasticMember* member = meeting_ ? nullptr : elastic_member(&made)) return meet_elastic(*member);
    if (!made.is_ok()) return made;
    TcpJobSpec spec;
    if (meeting_) {
      spec.rank = meeting_->rank;
      spec.size = meeting_->size;
      spec.master_addr = meeting_->master_addr;
      spec.master_port = meeting_->master_port;
      spec.job_id = meeting_->job_id;
      spec.rank_var = spec.size_var = spec.addr_var = spec.port_var = "the test's meeting";
    } else {
      Status s = tcp_job_from_environment(&spec);
      if (!s.is_ok()) return s;
    }
    rank_ = spec.rank;
    if (spec.size == 1) {  // alone: nobody to meet
      world_.peers.push_back({this_host_id(), "", 0});
      world_.links.resize(1);
      return Status::ok();
    }
    Status s = start_auth(spec);
    return s.is_ok() ? tcp_rendezvous(spec, options_.rendezvous_timeout_seconds, &world_, auth_) : s;
  }

  // The world the elastic rendezvous formed: every member already knows
  // every other's address, so the mesh is all that is left to connect.
  Status meet_elastic(ElasticMember& member) {
    elastic_ = true;
    TcpJobSpec spec;  // for the secret's variables: a member is never alone
    spec.rank = 1;
    spec.size = 2;
    Status s = start_auth(spec);
    if (s.is_ok()) s = member.join(options_.rendezvous_timeout_seconds, &world_, &rank_);
    if (!s.is_ok() || world_.peers.size() <= 1) {
      world_.links.resize(world_.peers.size());
      return s;
    }
    const Deadline deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(options_.rendezvous_timeout_seconds));
    return connect_mesh(rank_, world_, auth_, deadline, &world_.links);
  }

  // A member of an elastic job whose mesh broke tells its rendezvous which
  // ranks it lost, so the next world need not wait until the rendezvous
  // sees them gone itself (through etcd: their leases' end).
  void tell_rendezvous_of_losses() {
    if (!elastic_ || !mesh_ || mesh_->failure().is_ok() || mesh_->lost().empty()) return;
    if (ElasticMember* member = elastic_member()) member->lost_peers(mesh_->lost());
  }

  // The world's mesh watches its peers' liveness: the background thread
  // drives it all the time (a split's may sit idle between uses, as the
  // staged worker's does; the world's mesh covers the same processes).
  Status heartbeat_timeout(double* seconds) const {
    return number_from_environment("HEARTBEAT_TIMEOUT_SECONDS",
                                   elastic_ ? kElasticHeartbeatTimeoutSeconds : kHeartbeatTimeoutSeconds, seconds);
  }

  // The job's secret (rendezvous/tcp_secret.h); strangers refused are logged
  // as warnings, once per address.
  Status start_auth(const TcpJobSpec& spec) {
    std::string warning;
    Status s = tcp_auth_from_environment(spec, &auth_, &warning);
    if (!s.is_ok()) return Status(s.code(), "rank " + std::to_string(spec.rank) + ": " + s.message());
    const LogLevel level = options_.log_level;
    const int rank = spec.rank;
    auth_.report = [level, rank](const std::string& message) {
      Logger logger(level);
      logger.set_rank(rank);
      CHORUS_LOG(logger, kWarning) << message;
    };
    if (!warning.empty()) auth_.report(warning);
    return Status::ok();
  }

  // Every rank on this host (the same answer everywhere): control messages
  // through shared memory; without it (refused, or turned off) over the mesh.
  Status start_shm_control() {
    if (!options_.tcp_shm_control || topo_.size <= 1 || topo_.local_size != topo_.size) return Status::ok();
    std::string why_not;
    Status s = open_shm_control_channel(*collectives_, topo_.rank, topo_.size, *socket_control_, &shm_control_,
                                        &why_not);
    // Rank 0 says so for the job; a rank whose own segment failed says why.
    if (s.is_ok() && !shm_control_ && (topo_.rank == 0 || !why_not.empty())) {
      Logger logger(options_.log_level);
      logger.set_rank(topo_.rank);
      CHORUS_LOG(logger, kWarning) << "control messages go over TCP, not shared memory: shared memory could not be "
                                   << (why_not.empty() ? std::string("set up on another rank") : "set up: " + why_not);
    }
    return s;
  }

  // A shared-memory barrier waits for a rank that may be dead: the mesh
  // says so (its connection closed), and no later step could run without
  // it, so this process ends, naming it; a member of an elastic job gives
  // up the wait instead (the allreduce fails, and with it the runtime).
  void end_if_peer_lost() {
    if (mesh_->progress(0).is_ok()) return;
    if (elastic_) throw SharedWaitAbandoned(mesh_->failure().message());
    Logger logger(options_.log_level);
    logger.set_rank(topo_.rank);
    CHORUS_LOG(logger, kError) << mesh_->failure().message() << "; a shared-memory allreduce waits for it, so rank "
                               << topo_.rank << " exits with code " << kPeerLostExitCode;
    end_job(kPeerLostExitCode);
  }

  const RuntimeOptions options_;
  std::optional<TcpMeeting> meeting_;
  TcpWorld world_;  // links move into the mesh at start
  int rank_ = 0;
  SetScope scope_;
  bool connected_ = false;
  bool elastic_ = false;  // a member of an elastic job: never ends the process
  TcpAuth auth_;  // the job's secret, kept for process sets' meshes
  uint64_t splits_ = 0;
  Topology topo_;
  std::unique_ptr<TcpMesh> mesh_;
  std::unique_ptr<TcpControlChannel> socket_control_;  // kept for its sockets beside shm_control_
  std::unique_ptr<ControlChannel> shm_control_;        // every rank on this host (comm/shm/shm_control_channel.h)
  std::unique_ptr<TcpCollectives> collectives_;
  std::unique_ptr<TcpPeerLink> link_;
  std::unique_ptr<HostSharedMemory> shared_memory_;
};

// Collective over every rank in the same place of the response order: the
// members open listeners, every rank learns their ports (an allgather over
// this mesh) and the members connect among themselves under a key of this
// split, so no connection of another split or job is taken for one of ours.
Status TcpBackend::split(int32_t set_id, const std::vector<int>& members, std::unique_ptr<Backend>* out) {
  out->reset();
  const uint64_t key = world_.key * 1000003 + ++splits_;
  const auto at = std::lower_bound(members.begin(), members.end(), topo_.rank);
  const bool member = at != members.end() && *at == topo_.rank;
  TcpWorld child;
  constexpr int32_t kNoListener = -2;  // a member whose listener failed: every rank fails alike
  int32_t port = -1;
  std::string why;
  if (member) {
    int bound = 0;
    Status s = listen_on("", 0, &child.listener, &bound);
    port = s.is_ok() ? bound : kNoListener;
    why = s.message();
  }
  std::vector<int32_t> ports(static_cast<size_t>(topo_.size));
  Status s = collectives_->allgatherv(&port, ports.data(), std::vector<int64_t>(ports.size(), 1), sizeof(int32_t));
  if (!s.is_ok()) return s;
  for (int m : members) {
    if (ports[static_cast<size_t>(m)] == kNoListener) {
      return Status::unknown_error("process set " + std::to_string(set_id) + ": rank " + std::to_string(m) +
                                   " could not open a listener" +
                                   (m == topo_.rank ? ": " + why : std::string(" (that rank's error says why)")));
    }
  }
  if (!member) return Status::ok();
  for (int m : members) {
    TcpPeerInfo p = world_.peers[static_cast<size_t>(m)];
    p.port = ports[static_cast<size_t>(m)];
    child.peers.push_back(p);
  }
  child.key = key;
  child.job_id = world_.job_id;
  const int index = static_cast<int>(at - members.begin());
  const Deadline deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(options_.rendezvous_timeout_seconds));
  s = connect_mesh(index, child, auth_, deadline, &child.links);
  if (!s.is_ok()) return Status::aborted("process set " + std::to_string(set_id) + ": " + s.message());
  *out = std::make_unique<TcpBackend>(options_, std::move(child), index, SetScope{set_id, members}, auth_);
  return Status::ok();
}

}  // namespace

// local: ranks with this rank's host id, in rank order; cross: the ranks
// with the same local rank on every host (as MPI's split by type and color).
Topology topology_of(int rank, const std::vector<TcpPeerInfo>& peers) {
  Topology t;
  t.rank = rank;
  t.size = static_cast<int>(peers.size());
  std::vector<int> local_rank_of(peers.size());
  for (size_t r = 0; r < peers.size(); ++r) {
    local_rank_of[r] = static_cast<int>(std::count_if(peers.begin(), peers.begin() + static_cast<std::ptrdiff_t>(r),
                                                      [&](const TcpPeerInfo& p) { return p.host_id == peers[r].host_id; }));
  }
  t.local_rank = local_rank_of[static_cast<size_t>(rank)];
  t.local_size = static_cast<int>(std::count_if(peers.begin(), peers.end(), [&](const TcpPeerInfo& p) {
    return p.host_id == peers[static_cast<size_t>(rank)].host_id;
  }));
  t.first_rank_on_host = static_cast<int>(
      std::find_if(peers.begin(), peers.end(),
                   [&](const TcpPeerInfo& p) { return p.host_id == peers[static_cast<size_t>(rank)].host_id; }) -
      peers.begin());
  t.cross_rank = 0;
  t.cross_size = 0;
  for (size_t r = 0; r < peers.size(); ++r) {
    if (local_rank_of[r] != t.local_rank) continue;
    if (static_cast<int>(r) < rank) ++t.cross_rank;
    ++t.cross_size;
  }
  // Every rank's host as many ranks as this one's (the same answer on every rank).
  t.homogeneous = std::all_of(peers.begin(), peers.end(), [&](const TcpPeerInfo& p) {
    return std::count_if(peers.begin(), peers.end(), [&](const TcpPeerInfo& q) { return q.host_id == p.host_id; }) ==
           t.local_size;
  });
  t.transport = Transport::kTcp;
  return t;
}

std::unique_ptr<Backend> make_tcp_backend(const RuntimeOptions& options) {
  return std::make_unique<TcpBackend>(options, std::nullopt);
}

std::unique_ptr<Backend> make_tcp_backend(const RuntimeOptions& options, const TcpMeeting& meeting) {
  return std::make_unique<TcpBackend>(options, meeting);
}

}  // namespace chorus::detail
