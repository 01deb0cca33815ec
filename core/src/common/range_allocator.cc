#include "common/range_allocator.h"

#include <iterator>

namespace chorus::detail {

RangeAllocator::RangeAllocator(int64_t capacity, int64_t alignment)
    : capacity_(capacity / alignment * alignment), alignment_(alignment) {
  if (capacity_ > 0) add_free(0, capacity_);
}

void RangeAllocator::add_free(int64_t offset, int64_t bytes) {
  free_by_offset_.emplace(offset, bytes);
  free_by_size_.emplace(bytes, offset);
}

void RangeAllocator::remove_free(std::map<int64_t, int64_t>::iterator it) {
  auto [lo, hi] = free_by_size_.equal_range(it->second);
  for (auto s = lo; s != hi; ++s) {
    if (s->second == it->first) {
      free_by_size_.erase(s);
      break;
    }
  }
  free_by_offset_.erase(it);
}

std::optional<int64_t> RangeAllocator::allocate(int64_t bytes) {
  if (bytes <= 0) bytes = 1;
  if (bytes > capacity_) return std::nullopt;
  const int64_t want = (bytes + alignment_ - 1) / alignment_ * alignment_;
  auto best = free_by_size_.lower_bound(want);  // the smallest free range that fits
  if (best == free_by_size_.end()) return std::nullopt;
  const int64_t offset = best->second, have = best->first;
  remove_free(free_by_offset_.find(offset));
  if (have > want) add_free(offset + want, have - want);
  handed_out_.emplace(offset, want);
  in_use_ += want;
  return offset;
}

int64_t RangeAllocator::size_at(int64_t offset) const {
  auto it = handed_out_.find(offset);
  return it == handed_out_.end() ? 0 : it->second;
}

bool RangeAllocator::release(int64_t offset) {
  auto used = handed_out_.find(offset);
  if (used == handed_out_.end()) return false;
  int64_t start = offset, bytes = used->second;
  handed_out_.erase(used);
  in_use_ -= bytes;
  auto next = free_by_offset_.lower_bound(start);
  if (next != free_by_offset_.end() && next->first == start + bytes) {
    bytes += next->second;
    auto after = std::next(next);
    remove_free(next);
    next = after;
  }
  if (next != free_by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      bytes += prev->second;
      remove_free(prev);
    }
  }
  add_free(start, bytes);
  return true;
}

}  // namespace chorus::detail
