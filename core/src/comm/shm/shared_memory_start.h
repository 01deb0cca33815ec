#pragma once
// Whether a backend starts with host shared memory, the same for every
// transport: only when the allreduce algorithm may use it, more than one
// rank runs and all of them share this host; arenas only for the whole job
// (process sets stage). Says once, on rank 0, when a single host goes
// without it, and fails when CHORUS_ALLREDUCE_ALGO=shm cannot have it.

#include <memory>

#include "chorus/options.h"
#include "comm/backend.h"
#include "comm/shm/host_shared_memory.h"

namespace chorus::detail {

/// Collective over `comm`, whose ranks are `topo`'s. Leaves *out empty when
/// the ranks go without shared memory (the same on every rank).
Status start_host_shared_memory(Communicator& comm, const Topology& topo, const RuntimeOptions& options,
                                std::unique_ptr<HostSharedMemory>* out);

}  // namespace chorus::detail
