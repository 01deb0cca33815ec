// chorus/elastic.h: the state protocol and run() over the process-wide
// runtime; the membership itself is the TCP transport's
// (rendezvous/elastic_member.h).
#include "chorus/elastic.h"

#include <memory>
#include <string>

#include "api/runtime_access.h"
#include "chorus/chorus.h"
#include "rendezvous/elastic_member.h"

namespace chorus::elastic {

HostsUpdatedInterrupt::HostsUpdatedInterrupt(bool skip_sync)
    : std::runtime_error("the hosts of the elastic job changed: the world is formed again"), skip_sync_(skip_sync) {}

bool enabled() { return detail::elastic_requested(); }

HostUpdates host_updates() {
  Status made;
  detail::ElasticMember* member = detail::elastic_member(&made);
  throw_if_error(made);
  if (!member) return {};
  const detail::ElasticHostsNotice n = member->latest_notice();
  return {n.generation, n.kinds};
}

State::~State() = default;

void State::register_reset_callbacks(std::vector<std::function<void()>> callbacks) {
  for (auto& c : callbacks) reset_callbacks_.push_back(std::move(c));
}

void State::on_reset() {
  agreed_generation_ = 0;  // a new world: notices count from its formation
  for (auto& c : reset_callbacks_) c();
}

void State::commit() {
  save();
  check_host_updates();
}

// Max over the ranks of (generation, added, removed): every rank sees the
// same answer, so all of them throw at this step or none does.
void State::check_host_updates() {
  const HostUpdates mine = host_updates();
  int64_t v[3] = {mine.generation, mine.kinds & 1, (mine.kinds >> 1) & 1};
  auto t = std::make_shared<HostTensorView>(v, DataType::kInt64, TensorShape({3}));
  AllreduceOptions options;
  options.op = ReduceOp::kMax;
  allreduce_async("chorus.elastic.host_updates", t, t, options).wait();
  if (v[0] <= agreed_generation_) return;
  agreed_generation_ = v[0];
  throw HostsUpdatedInterrupt(v[1] == 0 && v[2] == 1);  // Horovod: skip when hosts were only removed
}

void reset() { detail::restart_process_runtime(); }

void run(State& state, const std::function<void()>& fn) {
  if (mpi_enabled()) {
    throw PreconditionError(Status::precondition_error(
        "chorus::elastic::run: this job runs over MPI, whose world cannot change; elastic training needs the TCP "
        "transport: start it with chorusrun --tcp --min-np N --max-np M (docs/elastic.md)"));
  }
  for (;;) {
    try {
      state.sync();
      fn();
      return;
    } catch (const HostsUpdatedInterrupt&) {
      // every rank finished the step and committed: nothing to roll back
    } catch (const AbortedError&) {
      if (!enabled()) throw;
      state.restore();
    }
    reset();
    state.on_reset();
  }
}

}  // namespace chorus::elastic
