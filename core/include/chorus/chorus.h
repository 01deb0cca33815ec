#pragma once
/// \file chorus.h
/// The Chorus C++ API: init(), the process's place in the job, and
/// asynchronous collectives on framework-neutral tensors. These functions
/// drive one process-wide Runtime (see runtime.h).
///
/// Threads: every function here may be called from any thread, concurrently
/// (an optimizer enqueues from autograd's threads while the training loop
/// waits on handles). Each call keeps the runtime alive while it runs, so a
/// shutdown() on another thread makes it fail (AbortedError or
/// PreconditionError), never crash. Handles may be waited on from any thread.
/// init() and shutdown() serialize with each other: each waits until the
/// other has finished. The one exception is the reference runtime() returns:
/// it is valid until shutdown(); where another thread may call shutdown(),
/// hold current_runtime() instead.

#include <memory>
#include <string>
#include <vector>

#include "chorus/error.h"
#include "chorus/export.h"
#include "chorus/handle.h"
#include "chorus/options.h"
#include "chorus/process_set.h"
#include "chorus/runtime.h"
#include "chorus/status.h"
#include "chorus/tensor.h"
#include "chorus/types.h"
#include "chorus/version.h"

namespace chorus {

/// Starts Chorus on this process (every rank must call it). Options come from
/// the environment unless given. Calling init() again while running does
/// nothing; init() after shutdown() starts a fresh runtime.
CHORUS_API void init();
CHORUS_API void init(const RuntimeOptions& options);
/// init(options), then registers `process_sets` (every rank the same list),
/// returned in order (ids 1, 2, ...); see Runtime::add_process_set.
CHORUS_API std::vector<ProcessSet> init(const RuntimeOptions& options,
                                        const std::vector<std::vector<int>>& process_sets);
/// Stops Chorus on this process; pending operations everywhere fail with
/// AbortedError. Safe to call when not initialized.
CHORUS_API void shutdown();
/// True from this process's init() until its own shutdown(), as Horovod's:
/// another rank's shutdown() does not change it (calls then fail, naming
/// that rank); is_running() says whether the runtime still runs.
CHORUS_API bool is_initialized();
/// True while the runtime runs: initialized here, and no rank has shut it
/// down (or lost its connection). init() after that starts a new one.
CHORUS_API bool is_running();

/// This process's place in the job. Throw PreconditionError before init().
CHORUS_API int rank();
CHORUS_API int size();
CHORUS_API int local_rank();
CHORUS_API int local_size();
CHORUS_API int cross_rank();
CHORUS_API int cross_size();
/// Whether every host runs the same number of ranks (Horovod's
/// hvd.is_homogeneous()), the same answer on every rank.
CHORUS_API bool is_homogeneous();

/// What this library was built with (Horovod's hvd.mpi_built(),
/// hvd.cuda_built(), hvd.nccl_built()); callable before init().
CHORUS_API bool mpi_built();
CHORUS_API bool cuda_built();
/// The NCCL_VERSION_CODE the library was compiled against (22809 for
/// 2.28.9), 0 in a build without NCCL.
CHORUS_API int nccl_built();
/// What carries the running job (Horovod's hvd.mpi_enabled() and
/// hvd.gloo_enabled(), Chorus's TCP transport being its Gloo); both false
/// before init() and after shutdown().
CHORUS_API bool mpi_enabled();
CHORUS_API bool tcp_enabled();

/// The process-wide runtime; throws PreconditionError before init(). The
/// reference is valid until shutdown() (see "Threads" above).
CHORUS_API Runtime& runtime();
/// The same, kept alive while the pointer is held: code that may race with
/// a shutdown() on another thread (an adapter, a C ABI) calls through this;
/// a call on a runtime shut down meanwhile fails instead of crashing.
CHORUS_API std::shared_ptr<Runtime> current_runtime();

/// Host memory that allreduce reduces in place across the ranks of a host;
/// see Runtime::allocate_shared_host. Throws PreconditionError before init().
CHORUS_API std::shared_ptr<void> allocate_shared_host(int64_t bytes);

/// Asynchronous allreduce of `input` into `output` (pass the same tensor for in place).
CHORUS_API Handle allreduce_async(const std::string& name, std::shared_ptr<Tensor> input,
                                  std::shared_ptr<Tensor> output, const AllreduceOptions& options = {});
/// Several allreduces negotiated, fused and completed together.
CHORUS_API std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                                       const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                       const std::vector<std::shared_ptr<Tensor>>& outputs,
                                                       const AllreduceOptions& options = {});
/// Asynchronous in-place broadcast from `root_rank`.
CHORUS_API Handle broadcast_async(const std::string& name, std::shared_ptr<Tensor> tensor, int root_rank);
/// Asynchronous out-of-place broadcast: the root's `input` into every rank's `output`.
CHORUS_API Handle broadcast_async(const std::string& name, std::shared_ptr<Tensor> input,
                                  std::shared_ptr<Tensor> output,
                                  int root_rank);
/// Asynchronous allgather along the first dimension; the result is Handle::output().
CHORUS_API Handle allgather_async(const std::string& name, std::shared_ptr<Tensor> input);
/// Asynchronous reducescatter along the first dimension; the result is Handle::output().
CHORUS_API Handle reducescatter_async(const std::string& name, std::shared_ptr<Tensor> input,
                                      const AllreduceOptions& options = {});
/// Several allgathers / reducescatters negotiated and completed together;
/// see Runtime::grouped_allgather_async, Runtime::grouped_reducescatter_async.
CHORUS_API std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                                       const std::vector<std::shared_ptr<Tensor>>& inputs);
CHORUS_API std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                           const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                           const AllreduceOptions& options = {});
/// Asynchronous alltoall with explicit splits (empty: equal); see Runtime::alltoall_async.
CHORUS_API Handle alltoall_async(const std::string& name, std::shared_ptr<Tensor> input,
                                 std::vector<int64_t> splits = {});
/// This rank is out of data (see Runtime::join_async); blocks until every
/// rank joined and returns the last rank to join.
CHORUS_API int join();
/// Blocks until every rank reached its matching barrier().
CHORUS_API void barrier();
/// Blocks until every member of `process_set` reached its matching barrier.
CHORUS_API void barrier(const ProcessSet& process_set);

/// Registers a process set (every rank, same order, same ranks); see
/// Runtime::add_process_set. Collectives run in it through OpHooks::process_set
/// on the Runtime calls, e.g. runtime().allreduce_async(name, in, out, {}, hooks).
CHORUS_API ProcessSet add_process_set(std::vector<int> ranks);
/// Ends a process set's collectives on every member; see Runtime::remove_process_set.
CHORUS_API void remove_process_set(const ProcessSet& process_set);

/// Horovod's hvd.start_timeline / hvd.stop_timeline on this rank; see
/// Runtime::start_timeline. stop_timeline() returns false (and does nothing)
/// when no timeline was running, also before init().
CHORUS_API void start_timeline(const std::string& path, bool mark_cycles = false);
CHORUS_API bool stop_timeline();

}  // namespace chorus
