#pragma once
// The background thread's work, one round at a time:
//   1. send this rank's new requests to the coordinator (rank 0 keeps its own);
//   2. rank 0: collect requests, make responses for tensors every rank
//      submitted, plan fusion, send the response list to every rank;
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
#include "negotiation/coordinator.h"
#include "negotiation/response_cache.h"
#include "runtime/idle_waiter.h"
#include "runtime/operation_executor.h"
#include "runtime/shared_stats.h"
#include "runtime/tensor_queue.h"
#include "timeline/timeline.h"

namespace chorus::detail {

class BackgroundLoop {
 public:
  BackgroundLoop(Backend& backend, TensorQueue& queue, const RuntimeOptions& options,
                 const Logger& logger, SharedStats& stats, Timeline& timeline);

  /// Runs rounds until the shutdown response was executed (or a fatal
  /// control-plane error), then fails what is left in the queue.
  void run();
  /// Thread-safe: asks the loop to tell every rank this one is leaving.
  void request_shutdown();

 private:
  bool run_round();
  Status send_local_requests(bool* progressed);
  Status coordinate(bool* progressed);
  Status receive_responses(bool* progressed);
  void add_requests(int from_rank, const RequestList& list);
  void use_cache_keys(RequestList* list);
  void resend_stale(const std::vector<Resend>& resend);
  bool stand_in_for_joined(const Response& response, const std::string& name, TensorEntry* out);
  void check_stalls();
  std::vector<ReadyTensor> take_fusable_burst();
  void execute(const ResponseList& list);
  void split_process_sets(std::vector<TensorEntry> entries);
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
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  ResponseCache cache_;                       // identical on every rank
  std::unordered_map<std::string, CacheKey> sent_keys_;  // this rank's requests sent by key
  std::vector<Request> to_resend_;            // stale keys, going out in full next round
  std::vector<Resend> pending_resends_;       // coordinator: to tell the workers
  std::vector<ReadyTensor> held_;             // coordinator: ready, waiting for a burst to complete
  std::chrono::steady_clock::time_point held_since_;

  std::atomic<bool> shutdown_requested_{false};
  bool shutdown_sent_ = false;
  std::string global_shutdown_reason_;  // coordinator: set once a rank asked to leave
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_stall_check_;
};

}  // namespace chorus::detail
