#pragma once
// The response cache: every rank remembers the signatures of tensors that
// completed recently, in identical slots, because every rank updates it in
// the same order (while executing the coordinator's response lists). A rank
// that enqueues a name again with the same signature only sets the name's
// slot in a bit vector (negotiation/slot_bits.h); the coordinator counts the
// ranks per slot (negotiation/cached_readiness.h) and answers with slots,
// not names: the steady state moves no names and builds no requests.
//
// Every change of a slot's content (a fill, a refill with a new signature,
// an eviction, an erase) advances the cache's epoch. A rank sends the epoch
// its bits were set at: a bit for a slot whose content changed after that
// epoch is stale (the sender's cache lagged the coordinator's), and the
// coordinator asks that rank to send the request in full (Resend). A name
// that comes back with another signature misses the cache and travels in
// full: if every rank changed it (say, a smaller last batch) the response
// refills its slot; if only some did, the mismatch error erases it
// everywhere. Least recently used entries are evicted when the capacity is
// reached. The cache calls nobody: it records each change of a slot's
// content (the slot and the request it held) for its owner to hand on
// (engine/loop_side.h says when). Pure logic: unit-tested without
// communication.

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "negotiation/messages.h"

namespace chorus::detail {

class ResponseCache {
 public:
  /// A slot's content changed (refill, eviction, erase): what was
  /// negotiated against `old` must be settled as `old`.
  struct SlotChange {
    int32_t slot = -1;
    Request old;  ///< what the slot held before the change
  };

  /// `capacity` 0 turns the cache off (lookups miss, puts do nothing).
  explicit ResponseCache(size_t capacity);

  /// The slot of `request`'s name when it is cached with the same signature.
  std::optional<int32_t> lookup(const Request& request) const;
  /// The request cached in `slot`, or nullptr when the slot is empty or out of range.
  const Request* at(int32_t slot) const;
  /// The slot `name` is cached in, or -1.
  int32_t slot_of(const std::string& name) const;
  /// `request` completed: cache or refresh it (a new signature refills the
  /// slot), evicting the least recently used entry when full.
  void put(const Request& request);
  /// put() for a tensor that completed under `slot`: when the slot still
  /// holds its name, only the recency changes (no lookup); else a put().
  void refresh(int32_t slot, const Request& request);
  /// Forgets `name` (a failed operation).
  void erase(const std::string& name);

  /// How many slot contents changed so far: equal on ranks that applied the
  /// same updates.
  uint64_t epoch() const { return epoch_; }
  /// True when `slot` holds today what it held at `epoch`: a bit set for it
  /// by a rank whose cache was at `epoch` means this slot's request.
  bool unchanged_since(int32_t slot, uint64_t epoch) const;

  /// The changes since the last clear_changes(), in the order they happened.
  const std::vector<SlotChange>& changes() const { return changes_; }
  /// Forgets the recorded changes (keeping the memory: slots keep changing).
  void clear_changes() { changes_.clear(); }

  size_t size() const { return by_name_.size(); }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    Request request;
    uint64_t changed_at = 0;  // the epoch of the last change of content
    bool used = false;
    std::list<int32_t>::iterator recency;
  };
  static bool cacheable(const Request& request);
  void fill(int32_t slot, const Request& request);
  /// Records the old content (moved out: the slot is refilled or freed next).
  void changing(int32_t slot) { changes_.push_back({slot, std::move(slots_[static_cast<size_t>(slot)].request)}); }

  std::vector<Slot> slots_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::list<int32_t> recency_;  // most recently used first
  std::vector<int32_t> free_;   // unused slots; the next one filled is the last
  uint64_t epoch_ = 0;
  std::vector<SlotChange> changes_;
};

}  // namespace chorus::detail
