#pragma once
// Best-fit allocation of byte ranges inside a region whose memory it never
// touches: the bookkeeping lives here, on the heap, so the region can be
// sparse shared memory whose pages are reserved only once they are handed
// out (Boost.Interprocess's allocators keep their headers inside the region,
// next to every block, which would touch unreserved pages).

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

namespace chorus::detail {

class RangeAllocator {
 public:
  /// Ranges of [0, capacity), each starting and sized on a multiple of
  /// `alignment` (a power of two).
  RangeAllocator(int64_t capacity, int64_t alignment);

  /// The offset of a free range of at least `bytes` bytes (at least one
  /// alignment unit), or nothing when no free range is that large.
  std::optional<int64_t> allocate(int64_t bytes);
  /// The bytes a range handed out at `offset` really spans (its size rounded
  /// up), or 0 when nothing was handed out there.
  int64_t size_at(int64_t offset) const;
  /// Gives back the range handed out at `offset`; merges it with free
  /// neighbours. False (and nothing changes) when nothing was handed out there.
  bool release(int64_t offset);

  int64_t capacity() const { return capacity_; }
  int64_t bytes_in_use() const { return in_use_; }

 private:
  void add_free(int64_t offset, int64_t bytes);
  void remove_free(std::map<int64_t, int64_t>::iterator it);

  const int64_t capacity_, alignment_;
  int64_t in_use_ = 0;
  std::map<int64_t, int64_t> free_by_offset_;       // offset -> bytes
  std::multimap<int64_t, int64_t> free_by_size_;    // bytes -> offset
  std::unordered_map<int64_t, int64_t> handed_out_;  // offset -> bytes
};

}  // namespace chorus::detail
