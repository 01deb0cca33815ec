#include "negotiation/cached_readiness.h"

namespace chorus::detail {

CachedReadiness::CachedReadiness(int world_size, size_t capacity)
    : world_size_(world_size),
      words_per_slot_((static_cast<size_t>(world_size) + 63) / 64),
      state_(capacity),
      ranks_(capacity * words_per_slot_, 0) {}

bool CachedReadiness::marked(size_t slot, int rank) const {
  const size_t r = static_cast<size_t>(rank);
  return (ranks_[slot * words_per_slot_ + r / 64] >> (r % 64)) & 1;
}

CachedReadiness::Mark CachedReadiness::mark(int32_t slot, int rank, Clock::time_point now) {
  const size_t s = static_cast<size_t>(slot);
  if (marked(s, rank)) return Mark::kDuplicate;
  SlotState& st = state_[s];
  if (st.count == 0) {
    st.first_seen = now;
    ++partial_slots_;
  }
  ++st.count;
  if (st.count < world_size_) {
    const size_t r = static_cast<size_t>(rank);
    ranks_[s * words_per_slot_ + r / 64] |= uint64_t{1} << (r % 64);
    return Mark::kWaiting;
  }
  reset(s);
  return Mark::kReady;
}

bool CachedReadiness::partial(int32_t slot) const {
  return slot >= 0 && static_cast<size_t>(slot) < state_.size() && state_[static_cast<size_t>(slot)].count > 0;
}

std::vector<int> CachedReadiness::ranks_of(size_t slot) const {
  std::vector<int> out;
  for (int r = 0; r < world_size_; ++r) {
    if (marked(slot, r)) out.push_back(r);
  }
  return out;
}

CachedReadiness::Dropped CachedReadiness::drop(int32_t slot) {
  Dropped out;
  if (!partial(slot)) return out;
  const size_t s = static_cast<size_t>(slot);
  out.ranks = ranks_of(s);
  out.first_seen = state_[s].first_seen;
  reset(s);
  return out;
}

void CachedReadiness::reset(size_t slot) {
  state_[slot].count = 0;
  for (size_t w = 0; w < words_per_slot_; ++w) ranks_[slot * words_per_slot_ + w] = 0;
  --partial_slots_;
}

std::vector<int32_t> CachedReadiness::partial_slots() const {
  std::vector<int32_t> out;
  if (idle()) return out;
  for (size_t s = 0; s < state_.size(); ++s) {
    if (state_[s].count > 0) out.push_back(static_cast<int32_t>(s));
  }
  return out;
}

std::vector<CachedReadiness::Stalled> CachedReadiness::stalled(Clock::time_point now, double threshold_seconds) const {
  std::vector<Stalled> out;
  for (int32_t s : partial_slots()) {
    const double waited = std::chrono::duration<double>(now - state_[static_cast<size_t>(s)].first_seen).count();
    if (waited >= threshold_seconds) {
      out.push_back({s, ranks_of(static_cast<size_t>(s)), waited, state_[static_cast<size_t>(s)].first_seen});
    }
  }
  return out;
}

}  // namespace chorus::detail
