// The free functions of chorus.h: a thin facade over one process-wide
// Runtime. This is the only process-wide state of the library besides the
// MPI environment (comm/mpi/mpi_environment.cc).
#include <cstdlib>
#include <mutex>

#include "api/runtime_access.h"
#include "chorus/chorus.h"
#include "comm/backend_choice.h"
#include "common/env_params.h"
#include "device/build_support.h"

namespace chorus {

namespace {

// Callers get a shared_ptr, not a reference: a shutdown() on another thread
// then cannot destroy the runtime under a call that is still running in it.
struct ProcessRuntime {
  std::mutex lifecycle;  // held through a whole init() or shutdown(): they never overlap
  std::mutex mu;         // held only to read or swap the pointer: calls never wait behind a join
  std::shared_ptr<Runtime> runtime;
  RuntimeOptions last_options;  // of the last init(): an elastic reset starts with them again
};

// Leaked on purpose: it must outlive every static destructor that could
// still call chorus::shutdown(); the atexit hook below stops the runtime.
ProcessRuntime& process_runtime() {
  static ProcessRuntime* instance = new ProcessRuntime();
  return *instance;
}

// Takes the runtime out under the pointer's lock and stops it outside it,
// so that other threads' calls are never blocked behind a join; an init()
// or another shutdown() waits (lifecycle) until it has stopped. A call still
// running elsewhere keeps it alive until it returns (it fails: the runtime
// no longer runs).
void stop_process_runtime() {
  ProcessRuntime& p = process_runtime();
  std::lock_guard<std::mutex> life(p.lifecycle);
  std::shared_ptr<Runtime> old;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    old = std::move(p.runtime);
  }
  if (old) old->shutdown();
}

void stop_at_exit() { stop_process_runtime(); }

std::shared_ptr<Runtime> require_runtime() {
  ProcessRuntime& p = process_runtime();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.runtime) {
    throw PreconditionError(Status::precondition_error("Chorus is not initialized: call chorus::init() first"));
  }
  return p.runtime;
}

}  // namespace

void init() { init(RuntimeOptions::from_environment()); }

void init(const RuntimeOptions& options) {
  ProcessRuntime& p = process_runtime();
  std::lock_guard<std::mutex> life(p.lifecycle);
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.runtime && p.runtime->is_running()) return;
  p.runtime.reset();  // a runtime another rank shut down: replace it
  p.last_options = options;
  p.runtime = std::make_shared<Runtime>(options);
  // Registered after the runtime initialized MPI, so it runs before MPI's
  // own exit hook: the background thread stops before MPI_Finalize.
  static bool registered = (std::atexit(stop_at_exit), true);
  (void)registered;
}

std::vector<ProcessSet> init(const RuntimeOptions& options, const std::vector<std::vector<int>>& process_sets) {
  init(options);
  std::vector<ProcessSet> out;
  for (const std::vector<int>& ranks : process_sets) out.push_back(require_runtime()->add_process_set(ranks));
  return out;
}

void shutdown() { stop_process_runtime(); }

void detail::restart_process_runtime() {
  stop_process_runtime();
  RuntimeOptions options;
  {
    ProcessRuntime& p = process_runtime();
    std::lock_guard<std::mutex> lock(p.mu);
    options = p.last_options;
  }
  init(options);
}

// Horovod's meaning: this process's init() and not yet its shutdown().
bool is_initialized() {
  ProcessRuntime& p = process_runtime();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.runtime != nullptr;
}

bool is_running() {
  ProcessRuntime& p = process_runtime();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.runtime && p.runtime->is_running();
}

Runtime& runtime() { return *require_runtime(); }
std::shared_ptr<Runtime> current_runtime() { return require_runtime(); }
int rank() { return require_runtime()->rank(); }
int size() { return require_runtime()->size(); }
int local_rank() { return require_runtime()->local_rank(); }
int ProcessSet::size() const { return is_global() ? chorus::size() : static_cast<int>(ranks_.size()); }
int ProcessSet::rank() const { return rank_of(chorus::rank()); }
int local_size() { return require_runtime()->local_size(); }
int cross_rank() { return require_runtime()->cross_rank(); }
int cross_size() { return require_runtime()->cross_size(); }
bool is_homogeneous() { return require_runtime()->is_homogeneous(); }

bool mpi_built() { return detail::built_with_mpi(); }
bool cuda_built() { return detail::built_with_cuda(); }
int nccl_built() { return detail::built_nccl_version(); }

namespace {
bool running_over(Transport transport) {
  ProcessRuntime& p = process_runtime();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.runtime && p.runtime->is_running() && p.runtime->transport() == transport;
}
}  // namespace

bool mpi_enabled() { return running_over(Transport::kMpi); }
bool tcp_enabled() { return running_over(Transport::kTcp); }

std::shared_ptr<void> allocate_shared_host(int64_t bytes) { return require_runtime()->allocate_shared_host(bytes); }

Handle allreduce_async(const std::string& name, std::shared_ptr<Tensor> input,
                       std::shared_ptr<Tensor> output, const AllreduceOptions& options) {
  return require_runtime()->allreduce_async(name, std::move(input), std::move(output), options);
}

std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<std::shared_ptr<Tensor>>& inputs,
                                            const std::vector<std::shared_ptr<Tensor>>& outputs,
                                            const AllreduceOptions& options) {
  return require_runtime()->grouped_allreduce_async(names, inputs, outputs, options);
}

std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                            const std::vector<std::shared_ptr<Tensor>>& inputs) {
  return require_runtime()->grouped_allgather_async(names, inputs);
}

std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                const AllreduceOptions& options) {
  return require_runtime()->grouped_reducescatter_async(names, inputs, options);
}

Handle broadcast_async(const std::string& name, std::shared_ptr<Tensor> tensor, int root_rank) {
  return require_runtime()->broadcast_async(name, std::move(tensor), root_rank);
}

Handle broadcast_async(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                       int root_rank) {
  return require_runtime()->broadcast_async(name, std::move(input), std::move(output), root_rank);
}

Handle allgather_async(const std::string& name, std::shared_ptr<Tensor> input) {
  return require_runtime()->allgather_async(name, std::move(input));
}

Handle reducescatter_async(const std::string& name, std::shared_ptr<Tensor> input, const AllreduceOptions& options) {
  return require_runtime()->reducescatter_async(name, std::move(input), options);
}

Handle alltoall_async(const std::string& name, std::shared_ptr<Tensor> input, std::vector<int64_t> splits) {
  return require_runtime()->alltoall_async(name, std::move(input), std::move(splits));
}

void barrier() { require_runtime()->barrier_async().wait(); }
void barrier(const ProcessSet& process_set) { require_runtime()->barrier_async(process_set).wait(); }

ProcessSet add_process_set(std::vector<int> ranks) { return require_runtime()->add_process_set(std::move(ranks)); }
void remove_process_set(const ProcessSet& process_set) { require_runtime()->remove_process_set(process_set); }

int join() {
  Handle h = require_runtime()->join_async();
  h.wait();
  return h.last_joined_rank();
}

}  // namespace chorus
