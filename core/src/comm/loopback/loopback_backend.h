#pragma once
// An in-process "job": N ranks as threads in one process, each with its own
// Runtime over a LoopbackBackend. Control messages travel through mailboxes;
// collectives meet at a rendezvous. Lets unit tests run the real
// negotiation, fusion and shutdown code with no MPI.

#include <memory>
#include <vector>

#include "comm/backend.h"

namespace chorus::detail {

class LoopbackWorld;

/// Creates the shared state of a job of `size` ranks; `ranks_per_host`
/// splits them into hosts for local/cross topology.
std::shared_ptr<LoopbackWorld> make_loopback_world(int size, int ranks_per_host = 0);

/// The backend of rank `rank` of `world`.
std::unique_ptr<Backend> make_loopback_backend(std::shared_ptr<LoopbackWorld> world, int rank);

/// The code a rank of `world` ended the job with (Backend::end_job), or -1.
int loopback_exit_code(const std::shared_ptr<LoopbackWorld>& world);

}  // namespace chorus::detail
