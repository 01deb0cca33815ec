#pragma once
// A worker's side of the background loop (engine/loop_side.h): sends this
// rank's requests to rank 0, by cache bits where its cache knows the
// signature, reads rank 0's response lists, and watches rank 0 for silence
// (engine/coordinator_watch.h). It owns the worker's half of the cache-bit
// protocol:
//   - a slot carries at most one outstanding bit (SentSlots); while it does,
//     the same slot's next request goes in full;
//   - a bit is settled when the list answers its tensor; a bit whose slot
//     changes first stays findable by name;
//   - a bit rank 0 could not take (ResponseList::resend: the slot changed
//     before the bit arrived) goes out again as the full request next round.
// A list it cannot read (another build's, corrupt) may hold collectives the
// other ranks now run: it asks rank 0 to shut every rank down, saying why,
// and ends this rank with the words rank 0 will tell the others.

#include <chrono>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "common/set_scope.h"
#include "negotiation/sent_slots.h"
#include "engine/coordinator_watch.h"
#include "engine/loop_side.h"
#include "engine/shared_stats.h"
#include "engine/tensor_queue.h"

namespace chorus::detail {

class WorkerSide final : public LoopSide {
 public:
  WorkerSide(ControlChannel& control, const ResponseCache& cache, TensorQueue& queue, const RuntimeOptions& options,
             const Topology& topo, const Logger& logger, SharedStats& stats);

  void take_resends(std::vector<Request>* into) override;
  Status submit(RequestList mine) override;
  Status poll(ResponseList* list, Polled* polled) override;
  void slots_changed(const std::vector<ResponseCache::SlotChange>& changes) override;
  void answered(const Response& response, size_t index) override;
  void list_ran(const ResponseList& list) override;
  bool waiting() const override { return false; }  // the loop sees this rank's tensors in flight
  std::optional<std::string> silence_reason() override {
    return watch_.check(queue_, std::chrono::steady_clock::now());
  }

 private:
  Status leave_unread(const std::string& why, ResponseList* list);

  ControlChannel& control_;
  const ResponseCache& cache_;  // the loop's: updated while lists run
  TensorQueue& queue_;
  const int rank_;
  const SetScope scope_;
  SharedStats& stats_;
  SentSlots sent_;               // bits out, not yet answered
  std::vector<Request> to_resend_;  // stale bits, going out in full next round
  CoordinatorWatch watch_;
};

}  // namespace chorus::detail
