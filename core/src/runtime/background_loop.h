#pragma once
// The background thread's work, one round at a time:
//   1. send this rank's new requests to the coordinator (rank 0 keeps its own);
//   2. rank 0: collect requests, make responses for tensors every rank
//      submitted, plan fusion, send the response list to every rank;
//      tensors every rank has in its response cache travel as cache bits
//      instead (negotiation/cached_readiness.h), and their responses name
//      cache slots;
//   3. every rank: run the response lists in the order they came.
// A shutdown anywhere travels the same way, so every rank stops at the same
// point of the response order and fails what is left with a clear reason.
// All calls into the Backend (MPI) happen on this thread.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/backend.h"
#include "common/logging.h"
#include "negotiation/cached_readiness.h"
#include "negotiation/coordinator.h"
#include "negotiation/response_cache.h"
#include "negotiation/sent_slots.h"
#include "runtime/collective_watchdog.h"
#include "runtime/coordinator_stall_check.h"
#include "runtime/coordinator_watch.h"
#include "runtime/idle_waiter.h"
#include "runtime/operation_executor.h"
#include "runtime/shared_stats.h"
#include "runtime/tensor_queue.h"
#include "timeline/timeline.h"

namespace chorus::detail {

class BackgroundLoop : private ResponseCache::Listener {
 public:
  BackgroundLoop(Backend& backend, TensorQueue& queue, const RuntimeOptions& options,
                 const Logger& logger, SharedStats& stats, Timeline& timeline);

  /// Runs rounds until the shutdown response was executed (or a fatal
  /// control-plane error), then fails what is left in the queue.
  void run();
  /// Thread-safe: asks the loop to tell every rank this one is leaving.
  void request_shutdown();
  /// After run(): why the loop ended, and whether by a stall shutdown.
  const std::string& end_reason() const { return end_reason_; }
  bool ended_by_stall() const { return stall_shutdown_; }

 private:
  bool run_round();
  Status send_local_requests(bool* progressed);
  Status coordinate(bool* progressed);
  Status receive_responses(bool* progressed);
  void add_requests(int from_rank, const RequestList& list);
  void use_cache_bits(RequestList* list);
  void add_full(Request request);
  void add_cached(int rank, int32_t slot);
  void leave_fast_path(int32_t slot);
  void before_slot_change(int32_t slot) override;
  bool coordinator_idle() const { return coordinator_->idle() && readiness_->idle(); }
  Status name_cached_slots(ResponseList& list) const;
  void resend_stale(const std::vector<Resend>& resend);
  std::vector<Response> take_fusable_burst();
  void execute(ResponseList& list);
  void finish(const Status& reason);

  Backend& backend_;
  TensorQueue& queue_;
  const RuntimeOptions& options_;
  const Logger& logger_;
  SharedStats& stats_;
  Timeline& timeline_;
  const Topology topo_;
  OperationExecutor executor_;
  IdleWaiter waiter_;
  CollectiveWatchdog watchdog_;  // a rank stopped inside a collective
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  std::unique_ptr<CachedReadiness> readiness_;  // rank 0 only: cache bits per slot
  std::unique_ptr<CoordinatorStallCheck> stall_check_;  // rank 0 only
  std::unique_ptr<CoordinatorWatch> watch_;             // workers only
  std::vector<int32_t> bits_ready_;           // coordinator: slots ready everywhere by cache bits
  ResponseCache cache_;                       // identical on every rank
  SentSlots sent_;                            // workers: bits out, not yet complete
  std::vector<Request> to_resend_;            // stale bits, going out in full next round
  std::vector<Resend> pending_resends_;       // coordinator: to tell the workers
  std::vector<ReadyTensor> held_;             // coordinator: ready, waiting for a burst to complete
  std::vector<int32_t> held_slots_;           // the same, negotiated by cache bits
  std::chrono::steady_clock::time_point held_since_;

  std::atomic<bool> shutdown_requested_{false};
  bool shutdown_sent_ = false;
  std::string global_shutdown_reason_;  // coordinator: set once a rank asked to leave
  bool finished_ = false;
  bool stall_shutdown_ = false;
  std::string end_reason_;
};

}  // namespace chorus::detail
