#pragma once
// How the ranks of a job without MPI find each other. Rank 0 listens at
// the master address; every other rank connects and says who it is (rank,
// job size, job id, host id, the port of its own listener). Rank 0 checks
// the claims (sizes agree, each rank once, the same job), and either sends
// everyone the world (per rank: host id, address, port, and a random key of
// this job's mesh) or an error that every rank that came fails with, naming
// the ranks that never came or the claims that clash. Then every pair of
// ranks without a connection yet connects (the higher rank to the lower's
// listener), so each rank holds one connection to every other. Every
// connection opens with the job's proof (net/tcp_handshake.h): a claim
// counts only once proven, and strangers are closed without holding up the
// ranks (net/tcp_acceptor.h).

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "net/tcp_handshake.h"
#include "net/tcp_socket.h"
#include "rendezvous/tcp_job_env.h"
#include "rendezvous/tcp_rendezvous_wire.h"

namespace chorus::detail {

struct TcpWorld {
  std::vector<TcpPeerInfo> peers;  // by rank
  std::vector<Socket> links;       // by rank; none for this rank
  Socket listener;                 // this rank's, kept for process sets' meshes
  uint64_t key = 0;                // this mesh's: connections that name another are refused
  std::string job_id;              // proven by every connection with the ranks and the key
};

/// This host's identity for grouping ranks into hosts: the host name and
/// the kernel's boot id (containers of one machine share memory only when
/// they share both; CHORUS_HOST_ID overrides it).
std::string this_host_id();

/// The rendezvous of `spec`'s job, bounded by `timeout_seconds`, every
/// connection proven with `auth`.
Status tcp_rendezvous(const TcpJobSpec& spec, double timeout_seconds, TcpWorld* out, const TcpAuth& auth = {});

/// Connects every pair of ranks of `world.peers` that `links` lacks: rank
/// `rank` connects to the listeners of lower ranks and accepts the higher
/// ones on `world.listener`; every connection proves the job's secret for
/// its two ranks, `world.key` and `world.job_id`.
Status connect_mesh(int rank, const TcpWorld& world, const TcpAuth& auth, Deadline deadline,
                    std::vector<Socket>* links);

}  // namespace chorus::detail
