#include "elastic_plan.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace chorus::launcher {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool contains(const std::vector<WorkerSlot>& workers, const WorkerSlot& w) {
  return std::find(workers.begin(), workers.end(), w) != workers.end();
}

// The index of `host` in `hosts`, or -1.
int index_of(const std::vector<HostSlots>& hosts, const std::string& host) {
  const auto it = std::find_if(hosts.begin(), hosts.end(), [&](const HostSlots& h) { return h.host == host; });
  return it == hosts.end() ? -1 : static_cast<int>(it - hosts.begin());
}

}  // namespace

std::vector<HostSlots> usable_hosts(const std::vector<HostSlots>& discovered,
                                    const std::vector<std::string>& blacklisted,
                                    const std::vector<std::string>& previous_order) {
  std::vector<HostSlots> out;
  for (const std::string& host : previous_order) {
    const int i = index_of(discovered, host);
    if (i >= 0 && !contains(blacklisted, host) && index_of(out, host) < 0)
      out.push_back(discovered[static_cast<size_t>(i)]);
  }
  for (const HostSlots& h : discovered) {
    if (!contains(blacklisted, h.host) && index_of(out, h.host) < 0) out.push_back(h);
  }
  return out;
}

std::vector<WorkerSlot> plan_workers(const std::vector<HostSlots>& available, std::optional<int> max_np,
                                     const std::vector<WorkerSlot>& running) {
  const size_t limit = max_np ? static_cast<size_t>(std::max(0, *max_np)) : std::numeric_limits<size_t>::max();
  std::vector<std::vector<bool>> chosen(available.size());
  for (size_t i = 0; i < available.size(); ++i)
    chosen[i].assign(static_cast<size_t>(std::max(0, available[i].slots)), false);
  size_t count = 0;
  // Running workers first: a slot that became available never displaces one.
  for (const WorkerSlot& w : running) {
    const int i = index_of(available, w.host);
    if (count == limit) break;
    if (i < 0 || w.local_slot < 0 || w.local_slot >= available[static_cast<size_t>(i)].slots) continue;
    std::vector<bool>::reference slot = chosen[static_cast<size_t>(i)][static_cast<size_t>(w.local_slot)];
    if (!slot) ++count;
    slot = true;
  }
  for (size_t i = 0; i < chosen.size() && count < limit; ++i) {
    for (size_t s = 0; s < chosen[i].size() && count < limit; ++s) {
      if (!chosen[i][s]) ++count;
      chosen[i][s] = true;
    }
  }
  std::vector<WorkerSlot> plan;
  for (size_t i = 0; i < chosen.size(); ++i) {
    for (size_t s = 0; s < chosen[i].size(); ++s) {
      if (chosen[i][s]) plan.push_back({available[i].host, static_cast<int>(s)});
    }
  }
  return plan;
}

std::vector<std::string> hosts_of(const std::vector<WorkerSlot>& plan) {
  std::vector<std::string> hosts;
  for (const WorkerSlot& w : plan) {
    if (!contains(hosts, w.host)) hosts.push_back(w.host);
  }
  return hosts;
}

WorkerChanges diff_workers(const std::vector<WorkerSlot>& running, const std::vector<WorkerSlot>& planned) {
  WorkerChanges c;
  for (const WorkerSlot& w : planned) (contains(running, w) ? c.keep : c.start).push_back(w);
  for (const WorkerSlot& w : running) {
    if (!contains(planned, w)) c.stop.push_back(w);
  }
  return c;
}

}  // namespace chorus::launcher
