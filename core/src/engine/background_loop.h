#pragma once
// The background thread's work, one round at a time:
//   1. hand this rank's new requests to its side (engine/loop_side.h): a
//      worker sends them to rank 0, rank 0 counts its own;
//   2. poll the side for response lists: rank 0 collects every rank's
//      requests, makes responses for tensors every rank submitted, plans
//      fusion and sends the list to every rank (engine/coordinator_side.h);
//      a worker receives them (engine/worker_side.h); tensors every rank
//      has in its response cache travel as cache bits and their responses
//      name cache slots;
//   3. every rank: run the response lists in the order they came, updating
//      the response cache, and hand the side what changed.
// A shutdown anywhere travels the same way, so every rank stops at the same
// point of the response order and fails what is left with a clear reason.
// So does a fault of the device operations (an NCCL error, a device
// operation past CHORUS_GPU_OP_TIMEOUT_SECONDS): the rank that sees it asks
// rank 0 to shut down with that message, and rank 0 tells every rank.
// All calls into the Backend (MPI) happen on this thread.

#include <atomic>
#include <functional>
#include <mutex>
#include <memory>
#include <string>

#include "comm/backend.h"
#include "common/logging.h"
#include "negotiation/response_cache.h"
#include "engine/collective_watchdog.h"
#include "engine/idle_waiter.h"
#include "engine/loop_side.h"
#include "engine/operation_executor.h"
#include "engine/shared_stats.h"
#include "engine/tensor_queue.h"
#include "timeline/timeline.h"

namespace chorus::detail {

class BackgroundLoop {
 public:
  /// Called on this loop's thread with a device fault's message: a process
  /// set's engine ends the whole job with it (the global engine's
  /// request_shutdown), not only its set.
  using FaultListener = std::function<void(const std::string& reason)>;

  BackgroundLoop(Backend& backend, TensorQueue& queue, const RuntimeOptions& options,
                 const Logger& logger, SharedStats& stats, Timeline& timeline, DeviceSupport device = {},
                 FaultListener on_device_fault = nullptr);

  /// Runs rounds until the shutdown response was executed (or a fatal
  /// control-plane error), then fails what is left in the queue.
  void run();
  /// Thread-safe: asks the loop to tell every rank this one is leaving,
  /// with `reason` (the first one given) when there is one.
  void request_shutdown(const std::string& reason = "");
  /// After run(): why the loop ended, and whether by a stall shutdown.
  const std::string& end_reason() const { return end_reason_; }
  bool ended_by_stall() const { return stall_shutdown_; }

 private:
  bool run_round();
  Status submit_local_requests(bool* progressed);
  void check_device_fault();
  Status run_due_lists(bool* progressed);
  Status name_cached_slots(ResponseList& list) const;
  void execute(ResponseList& list);
  void apply_tuned(const TunedSettings& tuned);
  void run_response(const Response& response);
  void hand_slot_changes();
  void finish(const Status& reason);

  Backend& backend_;
  TensorQueue& queue_;
  const Logger& logger_;
  SharedStats& stats_;
  Timeline& timeline_;
  const Topology topo_;
  OperationExecutor executor_;
  IdleWaiter waiter_;
  CollectiveWatchdog watchdog_;  // a rank stopped inside a collective
  ResponseCache cache_;          // identical on every rank
  std::unique_ptr<LoopSide> side_;  // rank 0's or a worker's, chosen once

  FaultListener on_device_fault_;
  std::atomic<bool> shutdown_requested_{false};
  std::mutex reason_mu_;
  std::string requested_reason_;  // request_shutdown's, under reason_mu_
  bool shutdown_sent_ = false;
  bool finished_ = false;
  int64_t lists_run_ = 0;  // this engine's response lists: the same count on every member
  bool stall_shutdown_ = false;
  std::string device_fault_;  // set once the device operations reported a fault
  std::string end_reason_;
};

}  // namespace chorus::detail
