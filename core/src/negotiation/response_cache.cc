#include "negotiation/response_cache.h"

namespace chorus::detail {

ResponseCache::ResponseCache(size_t capacity) : slots_(capacity) {
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<int32_t>(i - 1));
}

std::optional<CacheKey> ResponseCache::lookup(const Request& request) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return std::nullopt;
  const Slot& s = slots_[static_cast<size_t>(it->second)];
  if (!same_signature(s.request, request)) return std::nullopt;
  return CacheKey{it->second, s.generation, name_hash(request.name)};
}

const Request* ResponseCache::resolve(CacheKey key) const {
  if (key.slot < 0 || key.slot >= static_cast<int32_t>(slots_.size())) return nullptr;
  const Slot& s = slots_[static_cast<size_t>(key.slot)];
  return s.used && s.generation == key.generation && name_hash(s.request.name) == key.name_hash ? &s.request : nullptr;
}

void ResponseCache::fill(int32_t slot, const Request& request) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.request = request;
  s.request.rank = 0;  // the signature matters, not who cached it
  ++s.generation;
  s.used = true;
  recency_.push_front(slot);
  s.recency = recency_.begin();
  by_name_[request.name] = slot;
}

void ResponseCache::put(const Request& request) {
  // Shapes that differ per rank cannot share one cached signature; barriers
  // have a new name every time, so caching them would only evict.
  // Barriers and registrations are named by a count: each name comes once.
  if (slots_.empty() || first_dim_varies(request.type) || request.type == CollectiveType::kBarrier ||
      request.type == CollectiveType::kAddProcessSet) {
    return;
  }
  auto it = by_name_.find(request.name);
  if (it != by_name_.end()) {
    Slot& s = slots_[static_cast<size_t>(it->second)];
    if (same_signature(s.request, request)) {
      recency_.splice(recency_.begin(), recency_, s.recency);  // most recent now; no node reallocated
    } else {
      recency_.erase(s.recency);
      fill(it->second, request);  // a new signature: old keys must go stale
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
  }
  fill(slot, request);
}

void ResponseCache::erase(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  Slot& s = slots_[static_cast<size_t>(it->second)];
  recency_.erase(s.recency);
  s.used = false;
  free_.push_back(it->second);
  by_name_.erase(it);
}

}  // namespace chorus::detail
