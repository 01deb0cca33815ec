// The arena's range allocator (best fit, merging, alignment, full) and the
// arena itself: allocations inside it, reuse once freed, a clear reason
// when it is full, and memory that outlives the arena's other owners; pages
// reserved in the shared file only as ranges are handed out, and a clean
// failure when they cannot be.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "comm/shm/shared_arena.h"
#include "common/range_allocator.h"

using namespace chorus::detail;

TEST_CASE("RangeAllocator: aligned best fit, merging on release, full", "[arena]") {
  RangeAllocator a(1000, 64);  // 15 units of 64 bytes
  REQUIRE(a.capacity() == 960);
  const auto x = a.allocate(1), y = a.allocate(65), z = a.allocate(64);
  REQUIRE((x && y && z));
  REQUIRE(*x == 0);
  REQUIRE(*y == 64);
  REQUIRE(a.size_at(*y) == 128);
  REQUIRE(*z == 192);
  REQUIRE(a.bytes_in_use() == 256);
  REQUIRE_FALSE(a.allocate(961));
  REQUIRE_FALSE(a.release(5));  // nothing handed out there
  REQUIRE(a.release(*y));
  REQUIRE_FALSE(a.release(*y));  // twice
  // Best fit: the 128-byte hole left by y, not the large tail.
  const auto small = a.allocate(100);
  REQUIRE(small);
  REQUIRE(*small == 64);
  REQUIRE(a.release(*small));
  // Freeing x and z merges them with y's hole and the tail: one range again.
  REQUIRE(a.release(*x));
  REQUIRE(a.release(*z));
  REQUIRE(a.bytes_in_use() == 0);
  const auto all = a.allocate(960);
  REQUIRE(all);
  REQUIRE(*all == 0);
  REQUIRE_FALSE(a.allocate(1));
}

TEST_CASE("RangeAllocator: many allocations and releases in any order keep the books", "[arena]") {
  RangeAllocator a(1 << 20, 64);
  std::vector<int64_t> live;
  for (int round = 0; round < 2000; ++round) {
    if (live.empty() || round % 3 != 0) {
      const auto o = a.allocate(64 * (1 + round % 17));
      if (o) live.push_back(*o);
    } else {
      const size_t at = static_cast<size_t>(round * 7919) % live.size();
      REQUIRE(a.release(live[at]));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }
  for (int64_t o : live) REQUIRE(a.release(o));
  REQUIRE(a.bytes_in_use() == 0);
  REQUIRE(a.allocate(1 << 20));  // merged back into one range
}

TEST_CASE("SharedArena: allocations lie inside, come back when freed, and keep the arena alive", "[arena]") {
  const int64_t bytes = 1 << 16;
  std::shared_ptr<char> memory(new char[bytes], std::default_delete<char[]>());
  auto arena = std::make_shared<SharedArena>(memory.get(), bytes, memory, -1, 0);
  std::shared_ptr<void> a = arena->allocate(1000).value_or(nullptr);
  REQUIRE(a);
  REQUIRE(reinterpret_cast<uintptr_t>(a.get()) % 64 == 0);
  REQUIRE(arena->contains(a.get(), 1000));
  REQUIRE_FALSE(arena->contains(arena->base() + arena->bytes() - 10, 11));
  REQUIRE(arena->contains(arena->base() + arena->bytes() - 10, 10));
  REQUIRE_FALSE(arena->contains(arena->base() - 1, 1));
  REQUIRE(arena->bytes_in_use() == 1024);
  const int64_t usable = arena->bytes();  // from the first 64-byte boundary

  const auto too_large = arena->allocate(usable);
  REQUIRE_FALSE(too_large.is_ok());
  REQUIRE_THAT(too_large.status().message(), Catch::Contains("no free range of " + std::to_string(usable) + " bytes") &&
                        Catch::Contains("1024 of " + std::to_string(usable) + " in use") &&
                        Catch::Contains("CHORUS_SHM_ARENA_BYTES"));
  a.reset();
  REQUIRE(arena->bytes_in_use() == 0);
  std::shared_ptr<void> whole = arena->allocate(usable).value_or(nullptr);
  REQUIRE(whole);

  // The last owner of the memory is the allocation.
  std::weak_ptr<char> watch = memory;
  memory.reset();
  arena.reset();
  REQUIRE_FALSE(watch.expired());
  whole.reset();
  REQUIRE(watch.expired());
}

namespace {

// A sparse shared file of `bytes`, mapped: the arena's setting in production.
struct SparseFile {
  int fd = -1;
  char* base = nullptr;
  int64_t bytes = 0;
  explicit SparseFile(int64_t size) : bytes(size) {
    fd = static_cast<int>(syscall(SYS_memfd_create, "chorus-arena-test", 0));
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, size) == 0);
    void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    base = static_cast<char*>(p);
  }
  ~SparseFile() {
    munmap(base, static_cast<size_t>(bytes));
    close(fd);
  }
  int64_t reserved_bytes() const {
    struct stat st {};
    fstat(fd, &st);
    return static_cast<int64_t>(st.st_blocks) * 512;
  }
};

}  // namespace

TEST_CASE("SharedArena: pages are reserved in the file as ranges are handed out", "[arena]") {
  SparseFile file(64 << 20);
  auto arena = std::make_shared<SharedArena>(file.base + 4096, file.bytes - 4096, nullptr, file.fd, 4096);
  REQUIRE(file.reserved_bytes() == 0);
  std::shared_ptr<void> a = arena->allocate(8 << 20).value_or(nullptr);
  REQUIRE(a);
  REQUIRE(file.reserved_bytes() >= (8 << 20));
  REQUIRE(file.reserved_bytes() < (16 << 20));  // only the range's pages, not the arena
}

TEST_CASE("SharedArena: an allocation whose pages cannot be reserved fails cleanly", "[arena]") {
  SparseFile file(1 << 20);
  // Reserving through a read-only descriptor fails (EBADF), as a full
  // /dev/shm would (ENOSPC): no memory handed out, the range not lost.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", file.fd);
  const int read_only = open(path, O_RDONLY);
  REQUIRE(read_only >= 0);
  auto arena = std::make_shared<SharedArena>(file.base, file.bytes, nullptr, read_only, 0);
  const auto unreserved = arena->allocate(4096);
  REQUIRE_FALSE(unreserved.is_ok());
  REQUIRE_THAT(unreserved.status().message(), Catch::Contains("reserving 4096 bytes of shared memory (/dev/shm) failed"));
  REQUIRE(arena->bytes_in_use() == 0);
  close(read_only);
}
