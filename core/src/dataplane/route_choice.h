#pragma once
// Which algorithm carries an allreduce: a function of the settings every
// rank agreed on, the rank count, whether the ranks share memory (the same
// answer on every rank) and the call's total bytes (the same on every
// rank). Never of one rank's memory layout or timing.

#include <cstdint>

#include "chorus/options.h"
#include "chorus/types.h"

namespace chorus::detail {

enum class AllreduceRoute {
  kAlone,         ///< one rank: each input, scaled, into its output
  kTransport,     ///< the transport's own allreduce (MPI's or the TCP mesh's): small calls
  kRing,          ///< the pipelined ring over the peer links
  kSharedMemory,  ///< shared memory on one host: staged (zero-copy from the arenas)
  kSingleCopy,    ///< shared memory on one host, ordinary memory read across processes (zero-copy from the arenas)
  kAdasum,        ///< op Adasum: its own tree over the peer links, whatever the size or the host
  kHierarchical,  ///< across hosts: inside each host, then across them on a shard, then inside again
};

/// Whether the route runs through shared memory (staged, zero-copy or single copy).
inline bool on_shared_memory(AllreduceRoute route) {
  return route == AllreduceRoute::kSharedMemory || route == AllreduceRoute::kSingleCopy;
}

/// Name for the timeline and logs: "alone", "mpi", "ring", "shm", "cma", "adasum", "hierarchical".
const char* route_name(AllreduceRoute route);

/// Where an allreduce of `bytes` on `world_size` ranks goes; `shared_memory`
/// says whether every rank can reach the others' memory; `hierarchical`
/// whether CHORUS_HIERARCHICAL_ALLREDUCE is on and the hosts allow it
/// (HostGrid::usable(), the same on every rank): then it carries every
/// allreduce with data.
AllreduceRoute choose_allreduce_route(const RuntimeOptions& options, int64_t bytes, int world_size,
                                      bool shared_memory, bool hierarchical = false);
/// The same for an allreduce with `op`: Adasum is not elementwise, so no
/// route but its own (or kAlone on one rank) can carry it.
AllreduceRoute choose_allreduce_route(const RuntimeOptions& options, ReduceOp op, int64_t bytes, int world_size,
                                      bool shared_memory, bool hierarchical = false);

}  // namespace chorus::detail
