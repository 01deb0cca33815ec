#pragma once
// Elastic training's world: which workers run, given the hosts available
// now. Pure, so the rules are unit-tested; the driver runs what they say.
//
// A worker is a slot of a host: (host, local slot), local slot 0..slots-1.
// Each round the driver
//   1. orders the usable hosts: usable_hosts(discovered, blacklisted, the
//      last plan's hosts_of()),
//   2. plans the workers: plan_workers(those hosts, max-np, running),
//   3. starts and stops the difference: diff_workers(running, plan),
// and gives ranks in plan order. Running workers keep their slots while
// their host is available, not blacklisted and still has that slot: a
// host that appears, or grows, never displaces one (as in Horovod, the
// oldest hosts keep the lowest ranks).

#include <optional>
#include <string>
#include <vector>

#include "host_list.h"

namespace chorus::launcher {

struct WorkerSlot {
  std::string host;
  int local_slot = 0;  ///< 0..slots-1 on its host (Horovod's local_rank of the slot)
  bool operator==(const WorkerSlot& o) const { return host == o.host && local_slot == o.local_slot; }
  bool operator!=(const WorkerSlot& o) const { return !(*this == o); }
};

/// The hosts workers may use now, in rank order: `discovered` without the
/// `blacklisted` ones; those named in `previous_order` first, in that order
/// (Horovod's order_available_hosts), then the others in discovery order.
std::vector<HostSlots> usable_hosts(const std::vector<HostSlots>& discovered,
                                    const std::vector<std::string>& blacklisted,
                                    const std::vector<std::string>& previous_order);

/// The workers to run on `available` (ordered as usable_hosts orders
/// them), at most `max_np` (none: no limit), in rank order: host by host in
/// the order of `available`, each host's slots in order. The `running`
/// workers whose host and slot are still available are kept first; the
/// other slots are then filled in order, as long as `max_np` allows.
/// Without running workers: the first max_np slots, host by host.
std::vector<WorkerSlot> plan_workers(const std::vector<HostSlots>& available, std::optional<int> max_np,
                                     const std::vector<WorkerSlot>& running = {});

/// A plan's hosts, once each, in order: the next round's `previous_order`.
std::vector<std::string> hosts_of(const std::vector<WorkerSlot>& plan);

/// What changes from the `running` workers to the `planned` ones.
struct WorkerChanges {
  std::vector<WorkerSlot> start;  ///< planned, not running; in plan order
  std::vector<WorkerSlot>
      stop;  ///< running, not planned (host gone, blacklisted, fewer slots, max-np); in running order
  std::vector<WorkerSlot> keep;  ///< running and planned; in plan order. Empty while some run: no worker
                                 ///< carries the state over (Horovod then fails the job)
};
WorkerChanges diff_workers(const std::vector<WorkerSlot>& running, const std::vector<WorkerSlot>& planned);

}  // namespace chorus::launcher
