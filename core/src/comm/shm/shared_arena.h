#pragma once
// A rank's arena: the part of the host's shared memory where tensors can be
// allocated so that the other ranks on the host, which map it too, read and
// write them in place (the shared-memory allreduce's zero-copy path). The
// memory is reserved page by page as ranges are handed out, so a full
// /dev/shm fails an allocation cleanly instead of raising SIGBUS on a later
// touch. Freed ranges stay reserved for reuse (a caching arena); the arena
// and its mapping live as long as the last allocation from it.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/range_allocator.h"
#include "common/status_or.h"

namespace chorus::detail {

class SharedArena : public std::enable_shared_from_this<SharedArena> {
 public:
  /// `bytes` at `base` (the arena: its whole 64-byte units from the first boundary),
  /// kept mapped by `mapping`. `reserve_fd` >= 0: the
  /// shared-memory file, where the arena starts at `file_offset`, whose
  /// pages are reserved (fallocate) before a range is handed out; -1: plain
  /// memory that needs no reserving (in-process ranks).
  SharedArena(char* base, int64_t bytes, std::shared_ptr<void> mapping, int reserve_fd, int64_t file_offset);

  /// `bytes` bytes, 64-byte aligned, freed when the last copy of the pointer
  /// goes; an error saying why when the arena has no range that large left
  /// or the pages cannot be reserved.
  StatusOr<std::shared_ptr<void>> allocate(int64_t bytes);

  char* base() const { return base_; }
  int64_t bytes() const { return bytes_; }
  /// True when [p, p + bytes) lies inside the arena.
  bool contains(const void* p, int64_t bytes) const {
    const char* c = static_cast<const char*>(p);
    return c >= base_ && bytes >= 0 && c - base_ <= bytes_ - bytes;
  }
  int64_t bytes_in_use() const;

 private:
  void release(void* p);

  char* const base_;
  const int64_t bytes_;
  const std::shared_ptr<void> mapping_;
  const int reserve_fd_;
  const int64_t file_offset_;
  mutable std::mutex mu_;
  RangeAllocator ranges_;
};

}  // namespace chorus::detail
