#pragma once
/// \file runtime.h
/// Runtime: one instance of Chorus. It owns the tensor queue, the
/// negotiation state, the transport (MPI or Chorus's own TCP,
/// CHORUS_TRANSPORT) and the background thread that makes every call on it. The free functions in chorus.h drive one
/// process-wide Runtime; programs that want explicit ownership use this class.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "chorus/export.h"
#include "chorus/handle.h"
#include "chorus/options.h"
#include "chorus/tensor.h"

namespace chorus {

namespace detail {
class ProcessSetTable;
class RuntimeAccess;
class Engine;
}  // namespace detail

class CHORUS_API Runtime {
 public:
  /// Starts a runtime over the transport the options choose (MPI, initialized
  /// if nobody has; or TCP from the launcher's variables). Blocks until
  /// the background thread is ready; throws chorus::Error on failure.
  explicit Runtime(RuntimeOptions options = RuntimeOptions::from_environment());
  /// Shuts down (see shutdown()) and joins the background thread.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Tells every rank this one is leaving: pending operations here and on
  /// the other ranks fail with AbortedError, then the background thread stops.
  /// Idempotent.
  void shutdown();
  /// False once this rank or another one shut the runtime down.
  bool is_running() const;

  int rank() const;
  int size() const;
  /// Rank among the processes on this host, and their number.
  int local_rank() const;
  int local_size() const;
  /// Rank among the processes with the same local rank on all hosts, and their number.
  int cross_rank() const;
  int cross_size() const;
  /// Whether every host runs the same number of ranks (agreed at start).
  bool is_homogeneous() const;
  /// What carries this job: Transport::kMpi or Transport::kTcp (kAuto only
  /// for the library's in-process test runtimes).
  Transport transport() const;

  /// Starts an allreduce of `input` into `output` (the same tensor for in
  /// place). Every rank must enqueue the same name with the same dtype,
  /// shape, op and scale factors. Never blocks.
  Handle allreduce_async(const std::string& name, std::shared_ptr<Tensor> input,
                         std::shared_ptr<Tensor> output, const AllreduceOptions& options = {},
                         OpHooks hooks = {});
  /// Starts several allreduces that are negotiated and fused together and
  /// complete together. `outputs` may be empty for in place.
  std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                              const std::vector<std::shared_ptr<Tensor>>& inputs,
                                              const std::vector<std::shared_ptr<Tensor>>& outputs,
                                              const AllreduceOptions& options = {});
  /// The same among the members of `process_set`.
  std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                              const std::vector<std::shared_ptr<Tensor>>& inputs,
                                              const std::vector<std::shared_ptr<Tensor>>& outputs,
                                              const AllreduceOptions& options, const ProcessSet& process_set);
  /// Starts an in-place broadcast of `tensor` from `root_rank`.
  Handle broadcast_async(const std::string& name, std::shared_ptr<Tensor> tensor, int root_rank,
                         OpHooks hooks = {});
  /// Starts an out-of-place broadcast: root_rank's `input` lands in `output`
  /// on every rank (the root's too); `input` is left as it is.
  Handle broadcast_async(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                         int root_rank, OpHooks hooks = {});

  /// Starts an allgather: every rank contributes `input` (the first
  /// dimension may differ per rank, the others must not); the result, the
  /// inputs concatenated along the first dimension in rank order, is
  /// allocated through `hooks.context` (host memory when none) and returned
  /// by Handle::output() once the handle completed.
  Handle allgather_async(const std::string& name, std::shared_ptr<Tensor> input, OpHooks hooks = {});
  /// Starts a reducescatter: `input` (same shape on every rank, at least one
  /// dimension) is reduced over all ranks with `options` (op, scale factors)
  /// and rank r receives rows [offset_r, offset_r + n_r) of the first
  /// dimension, where the first (rows mod size) ranks get one row more
  /// (rows / size + 1) and the rest rows / size. The result is allocated
  /// through `hooks.context` (host memory when none): Handle::output().
  Handle reducescatter_async(const std::string& name, std::shared_ptr<Tensor> input,
                             const AllreduceOptions& options = {}, OpHooks hooks = {});
  /// Starts several allgathers that are negotiated and complete together
  /// (Horovod's grouped_allgather): handle i's output is tensor i gathered.
  /// Every rank passes the same names in the same order; `hooks` (process
  /// set, allocation context, callback) apply to each member.
  std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                              const std::vector<std::shared_ptr<Tensor>>& inputs, OpHooks hooks = {});
  /// Several reducescatters negotiated and completed together (Horovod's
  /// grouped_reducescatter); each member is scattered as reducescatter_async.
  std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                  const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                  const AllreduceOptions& options = {}, OpHooks hooks = {});
  /// The same with hooks of each member's own (an allocation context per
  /// output, as the C ABI's per-member user data needs); one process set for all.
  std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                              const std::vector<std::shared_ptr<Tensor>>& inputs,
                                              const std::vector<OpHooks>& hooks);
  std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                  const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                  const AllreduceOptions& options, const std::vector<OpHooks>& hooks);
  /// Starts an alltoall: rank i sends rows [sum(splits[0..j)), +splits[j]) of
  /// `input`'s first dimension to rank j and receives every rank's block for
  /// it, in rank order. `splits` has one entry per rank, each >= 0, summing
  /// to at most the first dimension; empty means equal splits (the first
  /// dimension must then divide by the rank count). The other dimensions
  /// must agree across ranks. Output through `hooks.context` (host memory
  /// when none): Handle::output(); rows received from each rank:
  /// Handle::received_splits().
  Handle alltoall_async(const std::string& name, std::shared_ptr<Tensor> input, std::vector<int64_t> splits = {},
                        OpHooks hooks = {});
  /// This rank is out of data: until every rank joined, allreduces the other
  /// ranks start run with zeros from this one (Average still divides by the
  /// full rank count), and any other collective fails on every rank. The
  /// handle completes once every rank joined; Handle::last_joined_rank()
  /// tells which joined last.
  Handle join_async();
  /// Starts a barrier: completes once every rank started one. One barrier
  /// per process set may be in flight on a rank (a second before the first
  /// completed is refused: InvalidArgumentError). A barrier that fails (a rank
  /// has called join()) does not count: the next one matches as usual.
  Handle barrier_async();
  /// A barrier among the members of `process_set`.
  Handle barrier_async(const ProcessSet& process_set);

  /// Takes part in collective `kind` of tensor `name` only to fail it: for
  /// a caller (a framework adapter, the C ABI) that found this rank's own
  /// input bad before it could make the call. The ranks that called with
  /// good input do not wait for this one: every rank's handle, this one's
  /// too, fails with InvalidArgumentError naming the refusing ranks and
  /// their `why`, and the name is free again (the collectives themselves
  /// refuse bad input the same way). Runs in `hooks.process_set`.
  Handle refuse_async(Collective kind, const std::string& name, const std::string& why, OpHooks hooks = {});
  /// The same for a grouped call of `names` (grouped_allreduce_async,
  /// grouped_allgather_async, grouped_reducescatter_async): every member fails.
  std::vector<Handle> refuse_group_async(Collective kind, const std::vector<std::string>& names,
                                         const std::string& why, const ProcessSet& process_set = ProcessSet());

  /// Registers a process set: `ranks` (global ranks, any order, no repeats)
  /// run collectives among themselves, negotiated by their own coordinator
  /// on their own thread, at the same time as other sets. Every rank of the
  /// job must call it, in the same order with the same ranks (ranks that
  /// differ fail on every rank, naming them); it blocks until the set is
  /// ready and returns it (ids count up from 1). Throws InvalidArgumentError
  /// for bad ranks, PreconditionError when MPI lacks MPI_THREAD_MULTIPLE.
  ProcessSet add_process_set(std::vector<int> ranks);
  /// Ends a process set's collectives: its pending operations fail with
  /// AbortedError on every member (the first member to remove it ends it for
  /// all); non-members only forget it. Every rank should call it. Throws
  /// InvalidArgumentError for the global set or an unknown set.
  void remove_process_set(const ProcessSet& process_set);
  /// The registered set with this id (0: the global set); throws
  /// InvalidArgumentError when there is none.
  ProcessSet process_set(int32_t id) const;
  /// The registered sets (not the global one), by id.
  std::vector<ProcessSet> process_sets() const;

  /// Counters of every set's collectives together.
  RuntimeStats stats() const;

  /// Starts writing this rank's timeline (Horovod's start_timeline): a
  /// Chrome trace of every operation from now on, to `path` on rank 0 and
  /// `path.rank<r>` on rank r, and `....process_set<id>` for each set this
  /// rank is a member of now. Local: the timeline changes nothing any rank
  /// computes, so each rank decides for itself (call it on every rank whose
  /// trace you want). Safe while operations run. `mark_cycles`: an instant
  /// event per background cycle that did work. Throws InvalidArgumentError
  /// for an empty path or a file that cannot be written, PreconditionError
  /// when a timeline is already running (CHORUS_TIMELINE, or a start
  /// without a stop), naming its file.
  void start_timeline(const std::string& path, bool mark_cycles = false);
  /// Ends the files start_timeline (or CHORUS_TIMELINE) began, as valid
  /// JSON. Returns false, doing nothing, when no timeline was running.
  bool stop_timeline();
  /// A span [start, end) labelled `label` on row `row` of this rank's
  /// timeline of `process_set` (the global set's file by default; a set's
  /// own file beside its collectives), e.g. DistributedOptimizer's "step N";
  /// nothing when no timeline is running.
  void timeline_span(const std::string& row, const std::string& label, std::chrono::steady_clock::time_point start,
                     std::chrono::steady_clock::time_point end, const ProcessSet& process_set = ProcessSet());

  /// `bytes` of host memory (64-byte aligned) for tensors that allreduce
  /// reduces fastest. When every rank runs on one host it comes from this
  /// rank's shared-memory arena, which the other ranks map too: an
  /// allreduce whose tensors lie there on every rank (inputs and outputs)
  /// reads and writes them in place, with no staging copies (about twice as
  /// fast for large tensors; docs/performance.md). Ordinary memory (still
  /// correct, just not zero-copy) when no shared-memory data plane reads
  /// arenas: one rank, ranks on several hosts, CHORUS_ALLREDUCE_ALGO=ring or
  /// mpi, CHORUS_SHM_ARENA_BYTES=0; and when the arena is full.
  /// Freed when the last copy of the pointer goes, even after shutdown.
  /// Throws InvalidArgumentError for negative `bytes`.
  std::shared_ptr<void> allocate_shared_host(int64_t bytes);
  /// True when `bytes` bytes at `p` lie in this rank's arena.
  bool in_shared_host(const void* p, int64_t bytes) const;
  const RuntimeOptions& options() const;

 private:
  friend class detail::RuntimeAccess;  // in-process backends, internal counters (core/src)
  CHORUS_LOCAL explicit Runtime(std::shared_ptr<detail::Engine> impl);

  /// The engine of `set` on this rank; throws naming `what` when this rank
  /// may not use it.
  CHORUS_LOCAL std::shared_ptr<detail::Engine> engine(const ProcessSet& set, const std::string& what) const;

  std::shared_ptr<detail::Engine> impl_;            // the global set
  std::unique_ptr<detail::ProcessSetTable> sets_;   // declared last: shut down first
};

}  // namespace chorus
