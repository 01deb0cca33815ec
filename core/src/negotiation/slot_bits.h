#pragma once
// A set of response-cache slots as a bit vector: what a rank sends the
// coordinator for tensors it has ready that every rank has cached (one bit
// per tensor instead of a request), and what the coordinator counts. On the
// wire only its non-zero 64-bit words travel, with their indices, so a big
// cache with few bits set stays a small message.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/wire.h"

namespace chorus::detail {

class SlotBits {
 public:
  void add(int32_t slot) {
    const uint32_t w = static_cast<uint32_t>(slot) / 64;
    if (w >= words_.size()) words_.resize(w + 1, 0);
    if (words_[w] == 0) used_.insert(std::upper_bound(used_.begin(), used_.end(), w), w);
    words_[w] |= uint64_t{1} << (static_cast<uint32_t>(slot) % 64);
  }
  bool contains(int32_t slot) const {
    const uint32_t w = static_cast<uint32_t>(slot) / 64;
    return slot >= 0 && w < words_.size() && (words_[w] >> (static_cast<uint32_t>(slot) % 64)) & 1;
  }
  bool empty() const { return used_.empty(); }
  size_t count() const {
    size_t n = 0;
    for (uint32_t w : used_) n += static_cast<size_t>(__builtin_popcountll(words_[w]));
    return n;
  }
  /// Empties the set, keeping its memory.
  void clear() {
    for (uint32_t w : used_) words_[w] = 0;
    used_.clear();
  }
  /// Calls f(slot) for every slot in the set, ascending.
  template <class F>
  void for_each(F&& f) const {
    for (uint32_t w : used_) {
      for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        f(static_cast<int32_t>(w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits))));
      }
    }
  }

  void write(WireWriter& out) const {
    out.put<uint32_t>(static_cast<uint32_t>(used_.size()));
    for (uint32_t w : used_) {
      out.put(w);
      out.put(words_[w]);
    }
  }
  /// False on a truncated or malformed set: indices not ascending, a zero
  /// word, or a bit at a slot >= `max_slots` (the receiver's capacity).
  bool read(WireReader& in, size_t max_slots) {
    clear();
    const size_t max_words = (max_slots + 63) / 64;
    uint32_t n = 0;
    if (!in.get(&n) || n > max_words) return false;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t w = 0;
      uint64_t bits = 0;
      if (!in.get(&w) || !in.get(&bits) || bits == 0 || w >= max_words) return false;
      if (!used_.empty() && w <= used_.back()) return false;
      const size_t past_last = max_slots - size_t{w} * 64;  // slots of word w that exist
      if (past_last < 64 && (bits >> past_last) != 0) return false;
      if (w >= words_.size()) words_.resize(w + 1, 0);
      words_[w] = bits;
      used_.push_back(w);
    }
    return true;
  }

  bool operator==(const SlotBits& o) const {
    if (used_ != o.used_) return false;
    for (uint32_t w : used_) {
      if (words_[w] != o.words_[w]) return false;
    }
    return true;
  }

 private:
  std::vector<uint64_t> words_;  // dense; words not in used_ are zero
  std::vector<uint32_t> used_;   // indices of the non-zero words, ascending
};

}  // namespace chorus::detail
