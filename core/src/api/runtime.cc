// The public Runtime: local validation of each call, then the queue.
#include "chorus/runtime.h"

#include <algorithm>

#include "kernels/reduce_kernels.h"
#include "common/env_params.h"
#include "chorus/error.h"
#include "api/collective_entries.h"
#include "api/enqueue_or_refuse.h"
#include "api/process_set_table.h"
#include "api/runtime_access.h"
#include "comm/backend_choice.h"
#include "device/build_support.h"
#include "engine/engine.h"
#include <utility>
#include <vector>
#include "chorus/chorus.h"

namespace chorus {

namespace {

using detail::allreduce_entry;
using detail::check_name;
using detail::CollectiveType;
using detail::enqueue_group_or_refuse;
using detail::enqueue_or_refuse;
using detail::invalid;
using detail::tensor_entry;

// The rank inside the engine's set of global rank `global_rank`, or -1.
int set_rank_of(const detail::Topology& topo, int global_rank) {
  const std::vector<int>& members = topo.scope.world_ranks;
  if (members.empty()) return global_rank >= 0 && global_rank < topo.size ? global_rank : -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == global_rank) return static_cast<int>(i);
  }
  return -1;
}

// Options of a set's engine: its timeline goes to a file of its own.
RuntimeOptions set_options(RuntimeOptions options, int32_t id) {
  if (!options.timeline_path.empty()) options.timeline_path += ".process_set" + std::to_string(id);
  options.autotune = false;  // the global set's coordinator tunes (one log, one search)
  return options;
}

}  // namespace

namespace {
// Options built in code are held to the same ranges as the environment's
// (a NaN time would reach the waits' conversions), before anything starts,
// and settled the same way.
RuntimeOptions checked(RuntimeOptions options) {
  throw_if_error(detail::check_options(options));
  detail::settle_stall_times(&options);
  return options;
}

std::shared_ptr<const detail::DeviceSupport> device_support_of_this_build() {
  return std::make_shared<const detail::DeviceSupport>(detail::build_device_support());
}

std::shared_ptr<detail::Engine> started(const RuntimeOptions& options) {
  auto backend = detail::make_backend(options);
  return std::make_shared<detail::Engine>(std::move(backend), options, nullptr, device_support_of_this_build());
}
}  // namespace

Runtime::Runtime(RuntimeOptions options) : Runtime(started(checked(std::move(options)))) {}

Runtime::Runtime(std::shared_ptr<detail::Engine> impl)
    : impl_(std::move(impl)), sets_(std::make_unique<detail::ProcessSetTable>()) {}

namespace detail {

std::unique_ptr<Runtime> RuntimeAccess::make(std::unique_ptr<Backend> backend, RuntimeOptions options) {
  return make(std::move(backend), std::move(options), device_support_of_this_build());
}

std::unique_ptr<Runtime> RuntimeAccess::make(std::unique_ptr<Backend> backend, RuntimeOptions options,
                                             std::shared_ptr<const DeviceSupport> device) {
  return std::unique_ptr<Runtime>(
      new Runtime(std::make_shared<Engine>(std::move(backend), checked(options), nullptr, std::move(device))));
}

InternalStats RuntimeAccess::stats(const Runtime& runtime) { return runtime.impl_->shared_stats()->internal(); }

}  // namespace detail

Runtime::~Runtime() = default;

void Runtime::shutdown() {
  sets_->clear();
  impl_->shutdown();
}

std::shared_ptr<detail::Engine> Runtime::engine(const ProcessSet& set, const std::string& what) const {
  if (set.is_global()) return impl_;
  return sets_->engine(set, rank(), what);
}
bool Runtime::is_running() const { return impl_->is_running(); }
int Runtime::rank() const { return impl_->topology().rank; }
int Runtime::size() const { return impl_->topology().size; }
int Runtime::local_rank() const { return impl_->topology().local_rank; }
int Runtime::local_size() const { return impl_->topology().local_size; }
int Runtime::cross_rank() const { return impl_->topology().cross_rank; }
int Runtime::cross_size() const { return impl_->topology().cross_size; }
bool Runtime::is_homogeneous() const { return impl_->topology().homogeneous; }
Transport Runtime::transport() const { return impl_->topology().transport; }
RuntimeStats Runtime::stats() const { return impl_->stats(); }
std::shared_ptr<void> Runtime::allocate_shared_host(int64_t bytes) { return impl_->allocate_shared_host(bytes); }
bool Runtime::in_shared_host(const void* p, int64_t bytes) const { return impl_->in_shared_host(p, bytes); }
const RuntimeOptions& Runtime::options() const { return impl_->options(); }

Handle Runtime::allreduce_async(const std::string& name, std::shared_ptr<Tensor> input,
                                std::shared_ptr<Tensor> output, const AllreduceOptions& options,
                                OpHooks hooks) {
  // The hot path of a backward pass: no error text built unless needed.
  auto target = hooks.process_set.is_global() ? impl_
                                              : engine(hooks.process_set, "allreduce of tensor '" + name + "': ");
  const int rank = target->topology().rank;
  return enqueue_or_refuse(*target, CollectiveType::kAllreduce, name, std::move(hooks), [&] {
    return allreduce_entry(name, std::move(input), std::move(output), options, rank);
  });
}

std::vector<Handle> Runtime::grouped_allreduce_async(const std::vector<std::string>& names,
                                                     const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                     const std::vector<std::shared_ptr<Tensor>>& outputs,
                                                     const AllreduceOptions& options) {
  return grouped_allreduce_async(names, inputs, outputs, options, ProcessSet());
}

std::vector<Handle> Runtime::grouped_allreduce_async(const std::vector<std::string>& names,
                                                     const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                     const std::vector<std::shared_ptr<Tensor>>& outputs,
                                                     const AllreduceOptions& options, const ProcessSet& process_set) {
  if (names.empty()) invalid("grouped allreduce: no tensors given");
  auto target = engine(process_set, "grouped allreduce '" + names.front() + "', ...: ");
  const int rank = target->topology().rank;
  return enqueue_group_or_refuse(*target, CollectiveType::kAllreduce, names, {}, "allreduce", [&] {
    detail::check_group_sizes("allreduce", names, inputs.size(), outputs.size());
    std::vector<detail::TensorEntry> entries;
    for (size_t i = 0; i < names.size(); ++i) {
      entries.push_back(allreduce_entry(names[i], inputs[i], outputs.empty() ? inputs[i] : outputs[i], options, rank));
    }
    detail::make_group(entries, "allreduce");
    return entries;
  });
}

Handle Runtime::allgather_async(const std::string& name, std::shared_ptr<Tensor> input, OpHooks hooks) {
  auto target = engine(hooks.process_set, "allgather of tensor '" + name + "': ");
  const int rank = target->topology().rank;
  return enqueue_or_refuse(*target, CollectiveType::kAllgather, name, std::move(hooks),
                           [&] { return detail::allgather_entry(name, input, rank, {}); });
}

Handle Runtime::reducescatter_async(const std::string& name, std::shared_ptr<Tensor> input,
                                   const AllreduceOptions& options, OpHooks hooks) {
  auto target = engine(hooks.process_set, "reducescatter of tensor '" + name + "': ");
  const int rank = target->topology().rank;
  return enqueue_or_refuse(*target, CollectiveType::kReducescatter, name, std::move(hooks),
                           [&] { return detail::reducescatter_entry(name, input, options, rank, {}); });
}

std::vector<Handle> Runtime::grouped_allgather_async(const std::vector<std::string>& names,
                                                     const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                     OpHooks hooks) {
  return grouped_allgather_async(names, inputs, std::vector<OpHooks>(names.size(), hooks));
}

std::vector<Handle> Runtime::grouped_allgather_async(const std::vector<std::string>& names,
                                                     const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                     const std::vector<OpHooks>& hooks) {
  const ProcessSet& set = detail::group_set(hooks, "allgather", names);  // first: it checks names is not empty
  auto target = engine(set, "grouped allgather '" + names.front() + "', ...: ");
  const int rank = target->topology().rank;
  return enqueue_group_or_refuse(*target, CollectiveType::kAllgather, names, hooks, "allgather", [&] {
    detail::check_group_hooks("allgather", names, hooks);
    detail::check_group_sizes("allgather", names, inputs.size(), hooks.size(), "hooks");
    std::vector<detail::TensorEntry> entries;
    for (size_t i = 0; i < names.size(); ++i) {
      entries.push_back(detail::allgather_entry(names[i], inputs[i], rank, hooks[i]));
    }
    detail::make_group(entries, "allgather");
    return entries;
  });
}

std::vector<Handle> Runtime::grouped_reducescatter_async(const std::vector<std::string>& names,
                                                         const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                         const AllreduceOptions& options, OpHooks hooks) {
  return grouped_reducescatter_async(names, inputs, options, std::vector<OpHooks>(names.size(), hooks));
}

std::vector<Handle> Runtime::grouped_reducescatter_async(const std::vector<std::string>& names,
                                                         const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                         const AllreduceOptions& options,
                                                         const std::vector<OpHooks>& hooks) {
  const ProcessSet& set = detail::group_set(hooks, "reducescatter", names);  // first: it checks names is not empty
  auto target = engine(set, "grouped reducescatter '" + names.front() + "', ...: ");
  const int rank = target->topology().rank;
  return enqueue_group_or_refuse(*target, CollectiveType::kReducescatter, names, hooks, "reducescatter", [&] {
    detail::check_group_hooks("reducescatter", names, hooks);
    detail::check_group_sizes("reducescatter", names, inputs.size(), hooks.size(), "hooks");
    std::vector<detail::TensorEntry> entries;
    for (size_t i = 0; i < names.size(); ++i) {
      entries.push_back(detail::reducescatter_entry(names[i], inputs[i], options, rank, hooks[i]));
    }
    detail::make_group(entries, "reducescatter");
    return entries;
  });
}

Handle Runtime::alltoall_async(const std::string& name, std::shared_ptr<Tensor> input, std::vector<int64_t> splits,
                               OpHooks hooks) {
  auto target = engine(hooks.process_set, "alltoall of tensor '" + name + "': ");
  const detail::Topology& topo = target->topology();
  return enqueue_or_refuse(*target, CollectiveType::kAlltoall, name, std::move(hooks),
                           [&] { return detail::alltoall_entry(name, input, std::move(splits), topo); });
}

Handle Runtime::join_async() {
  detail::TensorEntry e;
  e.request.rank = rank();
  e.request.type = detail::CollectiveType::kJoin;
  e.request.name = detail::join_tensor_name();
  e.request.shape = {0};
  return impl_->enqueue(std::move(e));
}

Handle Runtime::barrier_async() { return barrier_async(ProcessSet()); }

Handle Runtime::barrier_async(const ProcessSet& process_set) {
  auto target = engine(process_set, "barrier: ");
  detail::TensorEntry e;
  e.request.rank = target->topology().rank;
  e.request.type = detail::CollectiveType::kBarrier;
  // One name per set, not a count: a barrier that fails (a rank has joined)
  // would advance a count on the ranks in it and not on the joined ones, and
  // every later barrier would wait forever. A rank can have one barrier of a
  // set in flight; they match in order because none completes without all.
  e.request.name = "chorus.barrier";
  e.request.shape = {0};
  return target->enqueue(std::move(e));
}

Handle Runtime::refuse_async(Collective kind, const std::string& name, const std::string& why, OpHooks hooks) {
  const CollectiveType type = detail::collective_type(kind);
  check_name(name, detail::collective_name(type));
  auto target = engine(hooks.process_set, std::string(detail::collective_name(type)) + " of tensor '" + name + "': ");
  return target->enqueue(detail::refused_entry(type, name, target->topology().rank, std::move(hooks), why));
}

std::vector<Handle> Runtime::refuse_group_async(Collective kind, const std::vector<std::string>& names,
                                                const std::string& why, const ProcessSet& process_set) {
  const CollectiveType type = detail::collective_type(kind);
  const char* what = detail::collective_name(type);
  if (names.empty()) invalid(std::string("grouped ") + what + ": no tensors given");
  for (const std::string& name : names) check_name(name, what);
  auto target = engine(process_set, std::string("grouped ") + what + " '" + names.front() + "', ...: ");
  std::vector<OpHooks> hooks(names.size());
  for (OpHooks& h : hooks) h.process_set = process_set;
  return target->enqueue(detail::refused_group(type, names, target->topology().rank, hooks, what, why));
}

namespace {
// The members of a new process set, sorted, or why they are refused.
Status check_members(std::vector<int>& ranks, int size) {
  std::sort(ranks.begin(), ranks.end());
  const std::string what = "add_process_set: ";
  if (ranks.empty()) return Status::invalid_argument(what + "a process set needs at least one rank");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size) {
      return Status::invalid_argument(what + "rank " + std::to_string(ranks[i]) + " is outside 0.." +
                                      std::to_string(size - 1));
    }
    if (i > 0 && ranks[i] == ranks[i - 1]) {
      return Status::invalid_argument(what + "rank " + std::to_string(ranks[i]) + " is given twice");
    }
  }
  return Status::ok();
}
}  // namespace

ProcessSet Runtime::add_process_set(std::vector<int> ranks) {
  const Status members = check_members(ranks, size());
  // A registration is a collective of the global set, named by its id:
  // every rank registers in the same order, so the names (and ids) match.
  // Bad ranks on this rank are refused through it too (the others wait in it).
  const int32_t id = sets_->next_id();
  auto split = std::make_shared<detail::ProcessSetSplit>();
  split->id = id;
  split->members = ranks;
  detail::TensorEntry e;
  e.request.rank = rank();
  e.request.type = detail::CollectiveType::kAddProcessSet;
  e.request.name = "chorus.process_set." + std::to_string(id);
  e.request.shape = {0};
  e.request.process_set_ranks.assign(ranks.begin(), ranks.end());
  e.process_set_split = split;
  if (!members.is_ok()) detail::refuse(e, members.message());
  impl_->enqueue(std::move(e)).wait();
  // Members start the set's engine together: its backend's start is a
  // collective among them, on the set's own thread.
  std::shared_ptr<detail::Engine> set_engine;
  if (split->backend) {
    // A device fault in the set ends the job, not only the set.
    std::weak_ptr<detail::Engine> global = impl_;
    auto end_job = [global](const std::string& reason) {
      if (auto g = global.lock()) g->request_shutdown(reason);
    };
    set_engine = std::make_shared<detail::Engine>(std::move(split->backend), set_options(options(), id),
                                                  impl_->shared_stats(), impl_->device_support(), end_job);
  }
  ProcessSet set(id, ranks);
  sets_->add(set, std::move(set_engine));
  return set;
}

void Runtime::remove_process_set(const ProcessSet& process_set) {
  if (process_set.is_global()) invalid("remove_process_set: the global process set (id 0) cannot be removed");
  std::shared_ptr<detail::Engine> set_engine = sets_->remove(process_set, "remove_process_set: ");
  if (set_engine) set_engine->shutdown();  // tells the other members, joins the set's thread
}

ProcessSet Runtime::process_set(int32_t id) const { return id == 0 ? ProcessSet() : sets_->find(id); }

std::vector<ProcessSet> Runtime::process_sets() const { return sets_->list(); }

Handle Runtime::broadcast_async(const std::string& name, std::shared_ptr<Tensor> tensor, int root_rank,
                                OpHooks hooks) {
  std::shared_ptr<Tensor> output = tensor;  // in place
  return broadcast_async(name, std::move(tensor), std::move(output), root_rank, std::move(hooks));
}

Handle Runtime::broadcast_async(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                                int root_rank, OpHooks hooks) {
  auto target = engine(hooks.process_set, "broadcast of tensor '" + name + "': ");
  const detail::Topology& topo = target->topology();
  // A root outside the set is negotiated too (Request::root_rank -1).
  const int set_root = set_rank_of(topo, root_rank);
  return enqueue_or_refuse(*target, CollectiveType::kBroadcast, name, std::move(hooks), [&] {
    return detail::broadcast_entry(name, std::move(input), std::move(output), set_root, root_rank, topo.rank);
  });
}

}  // namespace chorus

// ---- Timeline control ----
//
// Timeline control at run time (Horovod's start_timeline / stop_timeline):
// each engine's Timeline opens and closes its file under its own lock, so
// the background threads keep running meanwhile.
namespace chorus {

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) throw_if_error(Status::invalid_argument("start_timeline: the path is empty"));
  std::vector<std::pair<std::string, std::shared_ptr<detail::Engine>>> files{{path, impl_}};
  for (auto& [id, engine] : sets_->member_engines()) {
    files.emplace_back(path + ".process_set" + std::to_string(id), engine);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [file, engine] = files[i];
    const Status opened = engine->timeline().open(file, engine->topology().rank, mark_cycles);
    if (!opened.is_ok()) {
      for (size_t j = 0; j < i; ++j) files[j].second->timeline().close();  // all or nothing
      throw_if_error(Status(opened.code(), "start_timeline: " + opened.message()));
    }
  }
}

bool Runtime::stop_timeline() {
  bool stopped = impl_->timeline().close();
  for (auto& [id, engine] : sets_->member_engines()) stopped = engine->timeline().close() || stopped;
  return stopped;
}

void Runtime::timeline_span(const std::string& row, const std::string& label,
                            std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end,
                            const ProcessSet& process_set) {
  engine(process_set, "timeline_span: ")->timeline().record(row, label, start, end);
}

void start_timeline(const std::string& path, bool mark_cycles) { current_runtime()->start_timeline(path, mark_cycles); }

bool stop_timeline() {
  std::shared_ptr<Runtime> runtime;
  try {
    runtime = current_runtime();  // also after another rank ended the job: its file still needs closing
  } catch (const PreconditionError&) {
    return false;  // not initialized: no timeline
  }
  return runtime->stop_timeline();
}

}  // namespace chorus
