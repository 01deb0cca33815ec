#include "comm/shm/shared_arena.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace chorus::detail {

namespace {
constexpr int64_t kAlignment = 64;  // cache lines: vector loads, no sharing between tensors

int64_t misalignment(const char* base) {
  const auto at = reinterpret_cast<uintptr_t>(base) % kAlignment;
  return at == 0 ? 0 : kAlignment - static_cast<int64_t>(at);
}
}  // namespace

SharedArena::SharedArena(char* base, int64_t bytes, std::shared_ptr<void> mapping, int reserve_fd,
                         int64_t file_offset)
    : base_(base + misalignment(base)), bytes_(std::max<int64_t>(0, bytes - misalignment(base)) / kAlignment * kAlignment),
      mapping_(std::move(mapping)), reserve_fd_(reserve_fd), file_offset_(file_offset + misalignment(base)),
      ranges_(bytes_, kAlignment) {}

StatusOr<std::shared_ptr<void>> SharedArena::allocate(int64_t bytes) {
  std::optional<int64_t> offset;
  int64_t span = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offset = ranges_.allocate(bytes);
    if (offset) span = ranges_.size_at(*offset);
  }
  if (!offset) {
    return Status::unknown_error("the shared-memory arena has no free range of " + std::to_string(bytes) + " bytes (" +
                                 std::to_string(bytes_in_use()) + " of " + std::to_string(bytes_) +
                                 " in use; CHORUS_SHM_ARENA_BYTES sets its size)");
  }
  if (reserve_fd_ >= 0) {
    // Whole pages around the range; reserving a page twice is harmless.
    const int64_t page = sysconf(_SC_PAGESIZE);
    const int64_t from = (file_offset_ + *offset) / page * page;
    const int64_t to = (file_offset_ + *offset + span + page - 1) / page * page;
    const int rc = posix_fallocate(reserve_fd_, static_cast<off_t>(from), static_cast<off_t>(to - from));
    if (rc != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      ranges_.release(*offset);
      return Status::unknown_error("reserving " + std::to_string(to - from) +
                                   " bytes of shared memory (/dev/shm) failed: " + std::strerror(rc));
    }
  }
  auto self = shared_from_this();  // the arena (and its mapping) outlives every allocation
  return std::shared_ptr<void>(base_ + *offset, [self](void* p) { self->release(p); });
}

void SharedArena::release(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  ranges_.release(static_cast<char*>(p) - base_);
}

int64_t SharedArena::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ranges_.bytes_in_use();
}

}  // namespace chorus::detail
