#pragma once
// Rank 0's side of the background loop (engine/loop_side.h): counts every
// rank's requests (the Coordinator) and cache bits (CachedReadiness), plans
// fusion, holds a ready burst up to fusion_wait_us while more of it is on
// its way, checks for stalls, and sends each round's response list to the
// workers. It owns rank 0's half of the cache-bit protocol:
//   - a bit is counted only against the content its slot holds now (same
//     epoch or unchanged since); otherwise its rank is asked to resend;
//   - a slot's marks leave the fast path, handed to the Coordinator as full
//     requests, when its content changes (with the OLD request), when a rank
//     joins, when a rank sends the same tensor in full, when a rank sets a
//     bit twice, and when the Coordinator already waits for the name.
// Rank 0's own bits are counted at once, against its own cache: never stale.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "negotiation/cached_readiness.h"
#include "negotiation/coordinator.h"
#include "engine/coordinator_stall_check.h"
#include "engine/loop_side.h"
#include "engine/shared_stats.h"
#include "tuning/autotuner.h"

namespace chorus::detail {

class CoordinatorSide final : public LoopSide {
 public:
  CoordinatorSide(ControlChannel& control, const ResponseCache& cache, const RuntimeOptions& options,
                  const Topology& topo, const Logger& logger, SharedStats& stats);

  void take_resends(std::vector<Request>*) override {}  // rank 0's bits are never stale
  Status submit(RequestList mine) override;
  Status poll(ResponseList* list, Polled* polled) override;
  void slots_changed(const std::vector<ResponseCache::SlotChange>& changes) override;
  void answered(const Response&, size_t) override {}
  void list_ran(const ResponseList&) override {}
  bool waiting() const override { return !idle(); }
  std::optional<std::string> silence_reason() override { return std::nullopt; }

 private:
  bool idle() const { return coordinator_.idle() && readiness_.idle(); }
  void add_requests(int from_rank, const RequestList& list);
  void add_full(Request request);
  void add_cached(int rank, int32_t slot);
  void leave_fast_path(int32_t slot, const Request& spec);
  void leave_fast_path(int32_t slot);
  void note_shutdown(int from_rank, const std::string& reason);
  void note_unreadable(int from_rank, const std::string& what);
  std::vector<Response> take_fusable_burst();
  void tune(ResponseList* out, std::chrono::steady_clock::time_point now);

  ControlChannel& control_;
  const ResponseCache& cache_;  // the loop's: updated while lists run
  const RuntimeOptions& options_;
  const Topology topo_;
  SharedStats& stats_;
  Coordinator coordinator_;
  CachedReadiness readiness_;           // cache bits per slot
  CoordinatorStallCheck stall_check_;
  std::vector<int32_t> bits_ready_;     // slots ready everywhere by cache bits
  std::vector<Resend> pending_resends_;  // stale bits: to tell the workers
  std::vector<ReadyTensor> held_;       // ready, waiting for a burst to complete
  std::vector<int32_t> held_slots_;     // the same, negotiated by cache bits
  std::chrono::steady_clock::time_point held_since_;
  std::string global_shutdown_reason_;  // set once a rank asked to leave
  std::unique_ptr<Autotuner> tuner_;    // CHORUS_AUTOTUNE only
  int64_t fusion_threshold_bytes_;      // what plans now: the options', then the tuner's
  double fusion_wait_us_;
};

}  // namespace chorus::detail
