#include "device/cuda/set_communicators.h"

#include <algorithm>
#include <vector>

#include "dataplane/algorithms/hierarchical_allreduce.h"

namespace chorus::detail::gpu {

Status SetCommunicators::create(const Spec& spec, std::unique_ptr<SetCommunicators>* out, std::string* warning) {
  const Topology topo = spec.backend->topology();
  std::unique_ptr<SetCommunicators> comms(new SetCommunicators());
  Status s = NcclComm::create(spec.backend->collectives(), topo.rank, topo.size, spec.device, spec.name,
                              spec.timeout_seconds, &comms->set_);
  if (!s.is_ok() || !spec.hierarchical || topo.size <= 1) {
    if (s.is_ok()) *out = std::move(comms);
    return s;
  }
  HostGrid grid;
  s = gather_host_grid(spec.backend->collectives(), topo.rank, topo.size, topo.first_rank_on_host, &grid);
  if (!s.is_ok()) return Status(s.code(), "gathering the hosts of " + spec.name + ": " + s.message());
  if (!grid.refusal.empty() && topo.rank == 0) {
    *warning = "CHORUS_HIERARCHICAL_ALLREDUCE is on but " + grid.refusal + ": CUDA allreduces of " + spec.name +
               " run on its one NCCL communicator";
  }
  if (grid.usable()) {
    const int place = static_cast<int>(std::find(grid.local.begin(), grid.local.end(), topo.rank) - grid.local.begin());
    // Both splits on every rank, in this order: ncclCommSplit is collective over the parent.
    s = NcclComm::split(*comms->set_, grid.local.front(), topo.rank, spec.name + ".host", spec.timeout_seconds,
                        &comms->host_);
    if (s.is_ok())
      s = NcclComm::split(*comms->set_, place, topo.rank, spec.name + ".across", spec.timeout_seconds,
                          &comms->across_);
    if (!s.is_ok()) {
      comms->abort();
      return s;
    }
    comms->place_ = HostPlace{place, static_cast<int>(grid.local.size())};
  }
  *out = std::move(comms);
  return Status::ok();
}

PlanComms SetCommunicators::plan_comms() const {
  PlanComms c;
  c.set = set_->get();
  if (host_) c.host = host_->get();
  if (across_) c.across = across_->get();
  return c;
}

Status SetCommunicators::Errors::poll() {
  for (const auto* comm : {&comms_->set_, &comms_->host_, &comms_->across_}) {
    if (!*comm) continue;
    Status s = (*comm)->async_error();
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

void SetCommunicators::abort() {
  for (auto* comm : {&across_, &host_, &set_})
    if (*comm) (*comm)->abort();
}

// The split ones first: they hold resources of the set's communicator.
void SetCommunicators::finalize_and_destroy(double timeout_seconds) {
  for (auto* comm : {&across_, &host_, &set_})
    if (*comm) (*comm)->finalize_and_destroy(timeout_seconds);
}

}  // namespace chorus::detail::gpu
