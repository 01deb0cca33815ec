#include "dataplane/algorithms/hierarchical_allreduce.h"

#include <algorithm>
#include <map>

#include "comm/peer_link_view.h"

namespace chorus::detail {

HostGrid host_grid(const std::vector<int>& first_rank_on_host, int rank) {
  std::map<int, std::vector<int>> hosts;  // by first rank: ascending host order, ranks ascending
  for (size_t r = 0; r < first_rank_on_host.size(); ++r) hosts[first_rank_on_host[r]].push_back(static_cast<int>(r));
  HostGrid grid;
  const std::vector<int>& first = hosts.begin()->second;
  for (const auto& host : hosts) {
    const std::vector<int>& ranks = host.second;
    if (ranks.size() == first.size()) continue;
    grid.refusal = "the hosts hold different numbers of ranks (" + std::to_string(first.size()) +
                   " on the host of rank " + std::to_string(first.front()) + ", " + std::to_string(ranks.size()) +
                   " on the host of rank " + std::to_string(ranks.front()) + ")";
    return grid;
  }
  grid.local = hosts[first_rank_on_host[static_cast<size_t>(rank)]];
  const size_t place = static_cast<size_t>(std::find(grid.local.begin(), grid.local.end(), rank) - grid.local.begin());
  for (const auto& host : hosts) grid.cross.push_back(host.second[place]);
  return grid;
}

Status gather_host_grid(Communicator& comm, int rank, int size, int first_rank_on_host, HostGrid* out) {
  std::vector<int> hosts(static_cast<size_t>(size));
  Status s = comm.allgatherv(&first_rank_on_host, hosts.data(), std::vector<int64_t>(hosts.size(), 1), sizeof(int));
  if (s.is_ok()) *out = host_grid(hosts, rank);
  return s;
}

int64_t hierarchical_scratch_bytes(const HostGrid& grid, int64_t count, DataType dtype) {
  const int local = static_cast<int>(grid.local.size()), cross = static_cast<int>(grid.cross.size());
  if (local < 1 || cross < 1) return 0;
  return std::max(ring_scratch_bytes(count, dtype, local),
                  ring_scratch_bytes(even_chunk(count, local, 0).length, dtype, cross));
}

Status hierarchical_allreduce(PeerLink& link, const HostGrid& grid, const void* input, void* output, int64_t count,
                              DataType dtype, ReduceOp op, void* scratch, const RingOptions& options) {
  if (!grid.usable()) return Status::invalid_argument("hierarchical allreduce: " + grid.refusal);
  if (count <= 0) return Status::ok();
  PeerLinkView host(link, grid.local), across(link, grid.cross);
  RingOptions inside = options;  // the scale applies once, on the shard
  inside.scale_factor = 1.0;
  inside.scale_divisor = 1;
  inside.halves = RingHalves::kReduceScatter;
  Status s = ring_allreduce(host, input, output, count, dtype, op, scratch, inside);
  if (!s.is_ok()) return s;
  const ChunkRange shard = even_chunk(count, host.size(), ring_owned_chunk(host.rank(), host.size()));
  char* mine = static_cast<char*>(output) + shard.offset * dtype_size(dtype);
  RingOptions between = options;
  between.halves = RingHalves::kBoth;
  s = ring_allreduce(across, mine, mine, shard.length, dtype, op, scratch, between);
  if (!s.is_ok()) return s;
  inside.halves = RingHalves::kAllgather;
  return ring_allreduce(host, output, output, count, dtype, op, scratch, inside);
}

}  // namespace chorus::detail
