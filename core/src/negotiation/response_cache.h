#pragma once
// The response cache: every rank remembers the signatures of tensors that
// completed recently, in identical slots, because every rank updates it in
// the same order (while executing the coordinator's response lists). A rank
// that enqueues a name again with the same signature sends only its 8-byte
// CacheKey; the coordinator turns the key back into the full request and, as
// all agree, skips the detailed validation.
//
// Keys from a rank whose cache lags the coordinator's can be stale (the slot
// was refilled since): the coordinator asks that rank to resend the full
// request (ResponseList::resend). A name that comes back with another
// signature misses the cache and travels in full: if every rank changed it
// (say, a smaller last batch) the response refills its slot with a new
// generation; if only some did, the mismatch error removes it everywhere.
// Least recently used entries are evicted when the capacity is reached.
// Pure logic: unit-tested without communication.

#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "negotiation/messages.h"

namespace chorus::detail {

class ResponseCache {
 public:
  /// `capacity` 0 turns the cache off (lookups miss, puts do nothing).
  explicit ResponseCache(size_t capacity);

  /// The key of `request`'s name when it is cached with the same signature.
  std::optional<CacheKey> lookup(const Request& request) const;
  /// The request cached under `key`, or nullptr when the key is stale.
  const Request* resolve(CacheKey key) const;
  /// `request` completed: cache or refresh it (a new signature refills the
  /// slot under a new generation), evicting the least recently used entry
  /// when full.
  void put(const Request& request);
  /// Forgets `name` (a failed operation).
  void erase(const std::string& name);

  size_t size() const { return by_name_.size(); }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    Request request;
    uint32_t generation = 0;
    bool used = false;
    std::list<int32_t>::iterator recency;
  };
  void fill(int32_t slot, const Request& request);

  std::vector<Slot> slots_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::list<int32_t> recency_;  // most recently used first
  std::vector<int32_t> free_;   // unused slots; the next one filled is the last
};

}  // namespace chorus::detail
