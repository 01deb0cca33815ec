#pragma once
// A Backend is a transport: everything a Runtime needs from the outside
// world. Where this process sits in the job, the control channel, the
// transport's own collectives, point-to-point links between the ranks and,
// when they share a host, shared-memory slots. It runs no algorithm: the data
// plane (dataplane/) builds the ring and the shared-memory allreduce on top.
// The background thread calls start() before anything else and stop() last,
// so backends that need thread affinity (MPI) get it.

#include <memory>
#include <string>

#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"
#include "comm/communicator.h"
#include "comm/control_channel.h"
#include "comm/peer_link.h"
#include "comm/shm/shared_arena.h"
#include "comm/shm/shared_slots.h"
#include "common/set_scope.h"

namespace chorus::detail {

/// Where this process sits among the ranks of its backend: the whole job,
/// or the members of a process set (`scope`), numbered 0..size-1.
struct Topology {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  /// The lowest rank of this backend on this rank's host: the same number
  /// on every rank of a host, so gathered from all ranks it groups them by host.
  int first_rank_on_host = 0;
  /// Every host runs the same number of these ranks (agreed: the same on all).
  bool homogeneous = true;
  /// What carries the job: kMpi or kTcp (kAuto: the in-process test backend).
  Transport transport = Transport::kAuto;
  SetScope scope;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Runs on the background thread, before any other call.
  virtual Status start() = 0;
  /// Runs on the background thread, after the last other call.
  virtual void stop() = 0;
  virtual Topology topology() const = 0;
  virtual ControlChannel& control() = 0;
  /// The transport's own collectives (comm/communicator.h).
  virtual Communicator& collectives() = 0;
  /// Point-to-point links to every rank of this backend (the ring's).
  virtual PeerLink& peer_link() = 0;
  /// The shared memory of the ranks when all of them share this host;
  /// nullptr otherwise (the same answer on every rank). Valid from start() on.
  virtual const SharedSlots* shared_slots() const { return nullptr; }
  /// This rank's shared-memory arena (comm/shm/shared_arena.h), whose tensors
  /// the data plane can reduce where they lie; nullptr when there is none.
  /// Valid from start() on; the arena outlives stop() while tensors use it.
  virtual std::shared_ptr<SharedArena> shared_arena() const { return nullptr; }
  /// Collective over every rank of this backend, on its background thread,
  /// in the same place of the response order everywhere: makes the backend
  /// of process set `set_id` whose members are `members` (ranks of this
  /// backend, ascending), to be started on that set's own thread. Non-members
  /// get nullptr. An error (e.g. MPI without MPI_THREAD_MULTIPLE) is the same
  /// on every rank.
  virtual Status split(int32_t set_id, const std::vector<int>& members, std::unique_ptr<Backend>* out) = 0;
  /// Ends every process of the whole job with `exit_code`, for when the job
  /// cannot end otherwise (a rank that never answers again). MPI: MPI_Abort
  /// on MPI_COMM_WORLD, which does not return. The loopback backend, whose
  /// ranks are threads of one test process, records the code and returns.
  virtual void end_job(int exit_code) = 0;
  /// Whether end_job() leaves this process alive: a member of an elastic
  /// job only leaves its world (its runtime stops; it may join the next).
  virtual bool outlives_job_end() const { return false; }
};

}  // namespace chorus::detail
