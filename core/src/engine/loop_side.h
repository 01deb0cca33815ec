#pragma once
// What rank 0 and the workers do differently in the background loop
// (engine/background_loop.h): the loop polls its side for response lists,
// runs them in order and hands the side what running them changed; the side
// holds its half of the negotiation and of the cache-bit protocol
// (engine/coordinator_side.h on rank 0, engine/worker_side.h elsewhere).
// The side is chosen once, when the loop is made.
//
// The flow is one way: the loop calls the side and the response cache, the
// cache calls nobody. While a list runs the loop hands the side, in the
// order they happened, the cache's slot changes (ResponseCache::changes:
// the slot and the request it held) and the tensors answered:
//   - before it reports the next answered tensor, the changes so far;
//   - after the list's last tensor, the rest, before list_ran() and before
//     the loop takes or polls anything new.
// Invariant that makes this safe on rank 0: bits are counted only between
// lists (submit, poll), against the content a slot held when the list
// began (bits set against older content are stale by their epoch and come
// back as resends). That content is the `old` of the slot's first change in
// the list, so the marks leave the fast path as full requests for the old
// tensor, and they have left before a bit for the new content is counted.
// On a worker the same order keeps SentSlots exact: a bit whose slot
// changed is displaced (kept by name) before its tensor's answer settles it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "negotiation/collective_traits.h"
#include "negotiation/messages.h"
#include "negotiation/response_cache.h"

namespace chorus::detail {

class LoopSide {
 public:
  virtual ~LoopSide() = default;

  /// Adds the full requests this rank must send again (stale cache bits).
  virtual void take_resends(std::vector<Request>* into) = 0;
  /// This rank's requests of the round: rank 0 counts them, a worker sends
  /// them to rank 0 (by cache bits where it can).
  virtual Status submit(RequestList mine) = 0;

  /// What poll() found.
  enum class Polled {
    kNothing,      ///< nothing arrived, no list is due
    kArrived,      ///< requests arrived (rank 0 counted them), no list is due yet
    kList,         ///< run `*list`, then poll again (a worker: lists arrive one by one)
    kLastOfRound,  ///< run `*list`, poll again next round (rank 0 plans one list per round)
  };
  /// Rank 0 reads what the workers sent and plans the next list (sent to
  /// them before it returns); a worker reads the next list rank 0 sent.
  virtual Status poll(ResponseList* list, Polled* polled) = 0;

  /// Slots changed while a list ran (see above), in order.
  virtual void slots_changed(const std::vector<ResponseCache::SlotChange>& changes) = 0;
  /// The list answers `response.names[index]` (before the cache is updated for it).
  virtual void answered(const Response& response, size_t index) = 0;
  /// `list` ran (its slot changes handed over), before its shutdown is taken.
  virtual void list_ran(const ResponseList& list) = 0;

  /// Tensors wait for other ranks: the loop sleeps only briefly.
  virtual bool waiting() const = 0;
  /// The stall shutdown reason once this rank has waited too long for rank
  /// 0 to say anything (workers), else nothing.
  virtual std::optional<std::string> silence_reason() = 0;
};

/// Collectives whose cached signature says all a response needs: their
/// tensors can be negotiated by cache bits alone. Groups wait for each other
/// in the Coordinator; joins and registrations are one-off.
inline bool negotiable_by_bits(const Request& r) { return r.group.empty() && traits_of(r.type).by_cache_bits; }

/// Moves the requests of `list` that `cache` holds with the same signature
/// into its cache bits, when `take_bit(slot, request)` agrees; the rest stay
/// full requests, in order. Sets the list's cache epoch.
template <class TakeBit>
void use_cache_bits(RequestList* list, const ResponseCache& cache, TakeBit take_bit) {
  list->cache_epoch = cache.epoch();
  if (cache.capacity() == 0) return;
  std::vector<Request> full;
  for (Request& r : list->requests) {
    if (negotiable_by_bits(r)) {
      const std::optional<int32_t> slot = cache.lookup(r);
      if (slot && take_bit(*slot, r)) {
        list->cached.add(*slot);
        continue;
      }
    }
    full.push_back(std::move(r));
  }
  list->requests.swap(full);
}

}  // namespace chorus::detail
