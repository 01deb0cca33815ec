#include "negotiation/response_cache.h"

#include "negotiation/collective_traits.h"

namespace chorus::detail {

ResponseCache::ResponseCache(size_t capacity) : slots_(capacity) {
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<int32_t>(i - 1));
}

std::optional<int32_t> ResponseCache::lookup(const Request& request) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return std::nullopt;
  if (!same_signature(slots_[static_cast<size_t>(it->second)].request, request)) return std::nullopt;
  return it->second;
}

const Request* ResponseCache::at(int32_t slot) const {
  if (slot < 0 || slot >= static_cast<int32_t>(slots_.size())) return nullptr;
  const Slot& s = slots_[static_cast<size_t>(slot)];
  return s.used ? &s.request : nullptr;
}

int32_t ResponseCache::slot_of(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

bool ResponseCache::unchanged_since(int32_t slot, uint64_t epoch) const {
  return at(slot) != nullptr && slots_[static_cast<size_t>(slot)].changed_at <= epoch;
}

// The collective's row says (negotiation/collective_traits.h).
bool ResponseCache::cacheable(const Request& request) { return traits_of(request.type).cacheable; }

void ResponseCache::fill(int32_t slot, const Request& request) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.request = request;
  s.request.rank = 0;  // the signature matters, not who cached it
  s.changed_at = ++epoch_;
  s.used = true;
  recency_.push_front(slot);
  s.recency = recency_.begin();
  by_name_[request.name] = slot;
}

void ResponseCache::put(const Request& request) {
  if (slots_.empty() || !cacheable(request)) return;
  auto it = by_name_.find(request.name);
  if (it != by_name_.end()) {
    Slot& s = slots_[static_cast<size_t>(it->second)];
    if (same_signature(s.request, request)) {
      recency_.splice(recency_.begin(), recency_, s.recency);  // most recent now; no node reallocated
    } else {
      changing(it->second);
      recency_.erase(s.recency);
      fill(it->second, request);  // a new signature: bits set before now go stale
    }
    return;
  }
  int32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = recency_.back();  // least recently used
    recency_.pop_back();
    by_name_.erase(slots_[static_cast<size_t>(slot)].request.name);
    changing(slot);
  }
  fill(slot, request);
}

void ResponseCache::refresh(int32_t slot, const Request& request) {
  const Request* held = at(slot);
  if (held == nullptr || held->name != request.name) {
    put(request);  // refilled earlier in the same list (evicted meanwhile)
    return;
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  recency_.splice(recency_.begin(), recency_, s.recency);
}

void ResponseCache::erase(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  changing(it->second);
  Slot& s = slots_[static_cast<size_t>(it->second)];
  recency_.erase(s.recency);
  s.used = false;
  s.changed_at = ++epoch_;
  free_.push_back(it->second);
  by_name_.erase(it);
}

}  // namespace chorus::detail
