#pragma once
// Allreduce across hosts in three steps (Horovod's hierarchical allreduce):
//   1. reduce-scatter among the ranks of each host: the rank at place l of
//      its host ends with chunk ring_owned_chunk(l) reduced over the host;
//   2. allreduce of that chunk among the ranks at place l on every host
//      (the pipelined ring): now reduced over the job;
//   3. allgather among the ranks of each host.
// Each byte crosses between hosts 2(h-1)/h times per host pair instead of
// per rank, and the steps inside a host ride on the host's fast links.
// Steps 1 and 3 are the two halves of the ring over the host's ranks
// (comm/peer_link_view.h restricts the parent link to them). Every rank of
// a chunk's cross ring gets the same bits, which step 3 copies: all ranks
// end equal. Needs every host to hold as many ranks (a HostGrid that is
// usable()).

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "comm/communicator.h"
#include "comm/peer_link.h"
#include "dataplane/algorithms/ring_allreduce.h"

namespace chorus::detail {

/// Where the ranks of a job sit, from every rank's Topology::first_rank_on_host.
struct HostGrid {
  std::vector<int> local;  ///< this host's ranks, ascending: a rank's place is its index
  std::vector<int> cross;  ///< the ranks at this rank's place on every host, hosts by their first rank
  std::string refusal;     ///< why the hierarchical allreduce cannot run here ("" when it can)
  /// More than one host, more than one rank on each, as many on each.
  bool usable() const { return refusal.empty() && local.size() > 1 && cross.size() > 1; }
};

/// `first_rank_on_host[r]`: rank r's host, named by its lowest rank (the
/// same vector on every rank gives every rank the same verdict).
HostGrid host_grid(const std::vector<int>& first_rank_on_host, int rank);

/// Collective over the `size` ranks of `comm`: gathers each rank's
/// `first_rank_on_host` (one allgather) and returns rank `rank`'s grid.
Status gather_host_grid(Communicator& comm, int rank, int size, int first_rank_on_host, HostGrid* out);

/// Scratch bytes hierarchical_allreduce needs.
int64_t hierarchical_scratch_bytes(const HostGrid& grid, int64_t count, DataType dtype);

/// Allreduces `count` elements of `input` into `output` (the same pointer
/// for in place) over every rank of `link` laid out as `grid` says, which
/// must be usable(). `options`' scale applies to the result once;
/// Average must arrive as Sum.
Status hierarchical_allreduce(PeerLink& link, const HostGrid& grid, const void* input, void* output, int64_t count,
                              DataType dtype, ReduceOp op, void* scratch, const RingOptions& options);

}  // namespace chorus::detail
