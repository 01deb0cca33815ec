#pragma once
/// \file options.h
/// Settings of a Runtime and of single collectives.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chorus/export.h"
#include "chorus/process_set.h"
#include "chorus/status.h"
#include "chorus/tensor.h"
#include "chorus/types.h"

namespace chorus {

enum class LogLevel : int { kTrace = 0, kDebug = 1, kInfo = 2, kWarning = 3, kError = 4, kFatal = 5 };

/// How allreduce moves data between ranks. CHORUS_ALLREDUCE_ALGO.
enum class AllreduceAlgorithm : int {
  kAuto = 0,  ///< shared memory when every rank is on one host (from shm_threshold_bytes), else
              ///< MPI's own allreduce below ring_threshold_bytes and the ring from there on
  kRing = 1,  ///< always the pipelined ring (over MPI point-to-point)
  kMpi = 2,   ///< always MPI's own allreduce
  kSharedMemory = 3,  ///< always shared memory (every rank must be on one host)
};

/// What the collectives of CUDA tensors run through. CHORUS_GPU_OPERATIONS.
enum class GpuOperations : int {
  kAuto = 0,   ///< NCCL when it loads on every rank, else staged
  kNccl = 1,   ///< NCCL on the device (an error where it does not load)
  kStaged = 2  ///< device -> pinned host -> the CPU data plane -> device
};

/// How the ranks of a job reach each other. CHORUS_TRANSPORT.
enum class Transport : int {
  kAuto = 0,  ///< MPI when an MPI launcher started the process or no rendezvous
              ///< variables are set; TCP when they are (torchrun, Slurm, CHORUS_MASTER_ADDR)
  kMpi = 1,   ///< always MPI
  kTcp = 2,   ///< always TCP, with a rendezvous through rank 0's address (docs/launcher.md)
};

/// Settings of one Runtime. `from_environment()` reads each from its
/// CHORUS_* variable (or the HOROVOD_* one as a fallback); see docs/tuning.md.
struct CHORUS_API RuntimeOptions {
  /// Largest fused buffer in bytes; 0 turns fusion off. CHORUS_FUSION_THRESHOLD.
  int64_t fusion_threshold_bytes = 128ll * 1024 * 1024;
  /// Longest sleep of the background thread between polls, in ms. CHORUS_CYCLE_TIME.
  double cycle_time_ms = 1.0;
  /// Wake the background thread at once when a tensor is enqueued (true), or
  /// only every cycle (false, Horovod's behaviour). CHORUS_WAKE_ON_ENQUEUE.
  bool wake_on_enqueue = true;
  /// How long the background thread busy-polls after the last event before it
  /// starts sleeping, in microseconds. CHORUS_SPIN_TIME_US.
  double spin_time_us = 50.0;
  /// While this rank has operations in flight (an answer from another rank
  /// is due), busy-poll this long after the last event before sleeping, in
  /// microseconds. CHORUS_PENDING_SPIN_TIME_US.
  double pending_spin_time_us = 5000.0;
  /// The coordinator holds tensors that are ready everywhere for up to this
  /// many microseconds while other tensors are still arriving, so a burst
  /// fuses into one response instead of trickling out; a lone tensor goes out
  /// at once. CHORUS_FUSION_WAIT_US.
  double fusion_wait_us = 200.0;
  /// Warn about tensors some ranks submitted and others did not after this many
  /// seconds; 0 disables. CHORUS_STALL_CHECK_TIME_SECONDS.
  double stall_check_seconds = 60.0;
  /// Shut down with an error naming the stalled tensors and missing ranks after
  /// this many seconds; 0 disables. CHORUS_STALL_SHUTDOWN_TIME_SECONDS.
  double stall_shutdown_seconds = 0.0;
  /// Slots of the response cache: a tensor whose signature every rank holds
  /// in a slot is negotiated by one bit per rank instead of a full request;
  /// 0 turns it off. CHORUS_CACHE_CAPACITY.
  int64_t cache_capacity = 1024;
  /// Data-plane algorithm for allreduce. CHORUS_ALLREDUCE_ALGO: auto, ring, mpi, shm.
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::kAuto;
  /// With kAuto, buffers of at least this many bytes take the ring.
  /// CHORUS_RING_THRESHOLD_BYTES (measured default: docs/performance.md).
  int64_t ring_threshold_bytes = 512 << 10;
  /// Bytes per pipelined ring segment. CHORUS_RING_SEGMENT_BYTES.
  int64_t ring_segment_bytes = 1 << 20;
  /// Allreduce across hosts in three steps: a reduce-scatter among the
  /// ranks of each host, an allreduce of each rank's shard among the ranks at
  /// its place on every host, an allgather inside the host (Horovod's
  /// HOROVOD_HIERARCHICAL_ALLREDUCE). Needs every host to hold as many ranks;
  /// otherwise rank 0 says so once and the usual routes run.
  /// CHORUS_HIERARCHICAL_ALLREDUCE.
  bool hierarchical_allreduce = false;
  /// With kAuto and every rank on one host, allreduces of at least this many
  /// bytes go through shared memory. CHORUS_SHM_THRESHOLD_BYTES (measured
  /// default: docs/performance.md).
  int64_t shm_threshold_bytes = 0;
  /// Shared-memory allreduces of at least this many bytes read and write
  /// ordinary (non-arena) tensors across processes (process_vm_readv/writev)
  /// instead of staging them; -1: never. CHORUS_SHM_SINGLE_COPY_THRESHOLD_BYTES
  /// (off by default: slower than staging where measured, docs/performance.md).
  int64_t shm_single_copy_threshold_bytes = -1;
  /// Bytes of each of a rank's two shared-memory staging blocks.
  /// CHORUS_SHM_BLOCK_BYTES.
  int64_t shm_block_bytes = 1 << 20;
  /// Bytes of address space for each rank's shared-memory arena, where
  /// allocate_shared_host() places tensors that the shared-memory allreduce
  /// reduces where they lie (no staging copies). Memory is used only as it
  /// is allocated; 0 turns arenas off. CHORUS_SHM_ARENA_BYTES.
  int64_t shm_arena_bytes = int64_t{16} << 30;
  /// How the ranks reach each other. CHORUS_TRANSPORT: auto, mpi, tcp.
  Transport transport = Transport::kAuto;
  /// TCP: a rendezvous that has not completed after this many seconds fails
  /// on every rank that came, naming the ranks that did not.
  /// CHORUS_RENDEZVOUS_TIMEOUT_SECONDS.
  double rendezvous_timeout_seconds = 300.0;
  /// TCP: a peer whose host stops answering is reported dead within this
  /// many seconds (a peer whose process ended: at once).
  /// CHORUS_PEER_TIMEOUT_SECONDS.
  double peer_timeout_seconds = 30.0;
  /// TCP: when every rank runs on one host, control messages go through
  /// shared memory instead of loopback TCP (the sockets still tell of lost
  /// peers). CHORUS_TCP_SHM_CONTROL.
  bool tcp_shm_control = true;
  /// What CUDA tensors' collectives run through (job-wide).
  /// CHORUS_GPU_OPERATIONS: auto (NCCL when it loads on every rank, else
  /// staged), nccl, staged (pinned host memory and the CPU data plane).
  GpuOperations gpu_operations = GpuOperations::kAuto;
  /// A device operation not finished after this many seconds faults the
  /// runtime (its handles fail, every rank shuts down); 0: no limit.
  /// CHORUS_GPU_OP_TIMEOUT_SECONDS.
  double gpu_op_timeout_seconds = 600.0;
  /// Write a Chrome-trace timeline of every tensor to this file (rank r > 0
  /// appends ".rank<r>"); empty: off. CHORUS_TIMELINE.
  std::string timeline_path;
  /// With a timeline: mark each cycle of the background thread that did
  /// work (Horovod's HOROVOD_TIMELINE_MARK_CYCLES). CHORUS_TIMELINE_MARK_CYCLES.
  bool timeline_mark_cycles = false;
  /// CHORUS_LOG_LEVEL: trace, debug, info, warning, error, fatal.
  LogLevel log_level = LogLevel::kWarning;
  /// Search the fusion threshold, fusion wait and cycle time on the measured
  /// bytes/s of the job's first minutes; rank 0 decides, every rank applies
  /// (docs/tuning.md, "Autotune"). CHORUS_AUTOTUNE (Horovod: HOROVOD_AUTOTUNE).
  bool autotune = false;
  /// Rank 0 writes each autotune trial here as CSV; empty: no log. CHORUS_AUTOTUNE_LOG.
  std::string autotune_log_path;
  /// Samples at the starting point discarded first. CHORUS_AUTOTUNE_WARMUP_SAMPLES.
  int64_t autotune_warmup_samples = 3;
  /// Samples per trial; a trial scores their median. CHORUS_AUTOTUNE_SAMPLES_PER_TRIAL.
  int64_t autotune_samples_per_trial = 3;
  /// Length of one sample in milliseconds (it ends at the first response
  /// list after that which moved allreduce bytes). CHORUS_AUTOTUNE_SAMPLE_MS.
  double autotune_sample_ms = 1000.0;

  /// Options from the environment; throws InvalidArgumentError naming the
  /// variable when a value does not parse.
  static RuntimeOptions from_environment();
};

/// Called when an operation completes: on the background thread, or for CUDA
/// tensors on the device operations' completion thread.
using StatusCallback = std::function<void(const Status&)>;

/// Options of one allreduce.
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  /// Multiplies the input before the reduction.
  double prescale_factor = 1.0;
  /// Multiplies the result after the reduction (Average divides on top).
  double postscale_factor = 1.0;
};

/// A collective that takes tensors, as Runtime::refuse_async names it.
enum class Collective : int { kAllreduce = 0, kBroadcast = 1, kAllgather = 2, kReducescatter = 3, kAlltoall = 4 };

/// Optional adapter services that go with an enqueued operation, and the
/// process set it runs in.
struct OpHooks {
  /// The ranks the operation runs among: the global set (every rank) by
  /// default, or one registered with Runtime::add_process_set. Ranks named
  /// by the operation (a broadcast root) are global ranks; per-rank inputs
  /// (alltoall splits) and outputs (allgather, reducescatter blocks) follow
  /// the members in ascending global rank.
  ProcessSet process_set;
  /// Allocation services; nullptr uses host memory.
  std::shared_ptr<OpContext> context;
  /// Runs on the background thread once the operation completed (CUDA
  /// tensors: on the device operations' completion thread, once the result
  /// is on the device), before the handle reports completion. Must not block
  /// or call back into Chorus.
  StatusCallback on_complete;
};

/// Counters of what a Runtime did, for tests, benchmarks and tuning.
struct RuntimeStats {
  int64_t tensors_allreduced = 0;  ///< tensors that completed an allreduce
  int64_t allreduce_ops = 0;       ///< data-plane allreduce calls (fused or not)
  int64_t fused_allreduce_ops = 0; ///< of those, the ones that carried 2+ tensors
  int64_t in_place_fused_allreduce_ops = 0;  ///< fused ones whose tensors lay back to back in memory,
                                            ///< reduced where they are (no fusion-buffer copies)
  int64_t shm_zero_copy_ops = 0;   ///< of those, the ones whose tensors lay in every rank's
                                   ///< arena, reduced where they lie (allocate_shared_host)
  int64_t broadcasts = 0;
  int64_t allgathers = 0;          ///< tensors that completed an allgather
  int64_t allgather_ops = 0;       ///< data-plane allgather calls (fused or not)
  int64_t fused_allgather_ops = 0; ///< of those, the ones that carried 2+ tensors
  int64_t bytes_allreduced = 0;
  int64_t negotiation_rounds = 0;  ///< response lists executed
  int64_t cache_hits = 0;          ///< requests negotiated by a cache bit (set on workers, counted on rank 0)
  int64_t cache_resends = 0;       ///< stale cache bits sent again as full requests
  int64_t errors = 0;              ///< operations completed with an error
};

}  // namespace chorus
