#pragma once
// The Backend without MPI: the ranks meet through rank 0's address
// (rendezvous/tcp_rendezvous.h), hold one TCP connection to every other rank
// (comm/tcp/tcp_mesh.h) for control, collectives and the ring, and share a
// POSIX shared-memory segment when all of them run on one host (grouped by
// the host ids of the rendezvous).

#include <memory>

#include "chorus/options.h"
#include "comm/backend.h"
#include "rendezvous/tcp_rendezvous.h"

namespace chorus::detail {

/// The whole job's TCP backend; start() reads the job from the environment
/// (rendezvous/tcp_job_env.h) and runs the rendezvous.
std::unique_ptr<Backend> make_tcp_backend(const RuntimeOptions& options);

/// Where a job of `size` ranks meets: for tests that run ranks as threads.
struct TcpMeeting {
  int rank = 0, size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string job_id;
};
/// A TCP backend of `meeting`'s job instead of the environment's.
std::unique_ptr<Backend> make_tcp_backend(const RuntimeOptions& options, const TcpMeeting& meeting);

/// Rank `rank`'s place among `peers` (by rank), grouped by their host ids.
Topology topology_of(int rank, const std::vector<TcpPeerInfo>& peers);

}  // namespace chorus::detail
