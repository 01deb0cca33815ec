#include "comm/host_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "common/status_or.h"

namespace chorus::detail {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "arrival counters must work across processes");

namespace {

constexpr size_t kCounterBytes = 128;  // own cache lines: no false sharing between ranks
constexpr size_t kNameBytes = 96;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// Every rank's answer to "did it work here?": all true or all see a failure.
// Whether every rank is `ok`; an error when the communicator itself failed.
Status all_agree(Communicator& comm, bool ok, bool* all_ok) {
  int32_t mine = ok ? 1 : 0, all = 0;
  Status s = comm.allreduce(&mine, &all, 1, DataType::kInt32, ReduceOp::kMin);
  *all_ok = s.is_ok() && all == 1;
  return s;
}

}  // namespace

// Per rank: counters, exchange areas and staging blocks (reserved up
// front), then the arena (reserved as it is handed out).
struct HostSharedMemory::Layout {
  size_t exchange, head, arena, per_rank, total;
  Layout(int size, int64_t block_bytes, int64_t arena_bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    exchange = 2 * static_cast<size_t>(kExchangeAreaBytes);  // zero-copy and single-copy calls
    head = round_up(kCounterBytes + exchange + 2 * static_cast<size_t>(block_bytes), page);
    arena = round_up(static_cast<size_t>(std::max<int64_t>(arena_bytes, 0)), page);
    per_rank = head + arena;
    total = per_rank * static_cast<size_t>(size);
  }
};

namespace {

// Rank 0: a new segment with every rank's head reserved; its name, or what
// failed. A random part in the name: no clash with a leftover or with
// another job whose rank 0 had the same pid (another PID namespace).
StatusOr<std::string> make_segment(size_t total, size_t per_rank, size_t head, bool sparse_tail, int size) {
  char name[kNameBytes] = {0};
  std::random_device random;
  int fd = -1, rc = EEXIST;
  for (int attempt = 0; attempt < 8 && rc == EEXIST; ++attempt) {
    const uint64_t nonce = (uint64_t{random()} << 32) ^ random();
    std::snprintf(name, sizeof(name), "/chorus.%d.%016llx", static_cast<int>(getpid()),
                  static_cast<unsigned long long>(nonce));
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    rc = fd < 0 ? errno : 0;
  }
  const char* step = "shm_open";
  if (rc == 0 && sparse_tail) {
    step = "ftruncate";
    rc = ftruncate(fd, static_cast<off_t>(total)) == 0 ? 0 : errno;
  }
  // fallocate, not ftruncate alone: a full /dev/shm fails here, not as SIGBUS later.
  for (int k = 0; rc == 0 && k < size; ++k) {
    step = "posix_fallocate";
    rc = posix_fallocate(fd, static_cast<off_t>(per_rank * static_cast<size_t>(k)), static_cast<off_t>(head));
  }
  if (fd >= 0) close(fd);
  if (rc == 0) return std::string(name);
  if (fd >= 0) shm_unlink(name);
  return Status::unknown_error(std::string(step) + " of a " + std::to_string(total) + "-byte segment in /dev/shm: " +
                               std::strerror(rc));
}

// Maps the segment `name`, checking it is the one rank 0 made; its address,
// or what failed. `*fd` stays open only when `keep_fd` (arenas reserve pages through it).
StatusOr<void*> map_segment(const char* name, size_t total, bool keep_fd, int* fd) {
  void* base = MAP_FAILED;
  Status failed;
  *fd = shm_open(name, O_RDWR, 0600);
  struct stat st {};
  if (*fd < 0) {
    failed = Status::unknown_error(std::string("shm_open(") + name + "): " + std::strerror(errno));
  } else if (fstat(*fd, &st) != 0 || static_cast<size_t>(st.st_size) != total) {
    failed = Status::unknown_error(std::string(name) + " is not the segment rank 0 made (size " +
                                   std::to_string(st.st_size) + ")");
  } else {
    base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (base == MAP_FAILED) failed = Status::unknown_error(std::string("mmap: ") + std::strerror(errno));
  }
  if (*fd >= 0 && (base == MAP_FAILED || !keep_fd)) {
    close(*fd);
    *fd = -1;
  }
  if (base == MAP_FAILED) return failed;
  return base;
}

}  // namespace

Status HostSharedMemory::create(Communicator& comm, int rank, int size, int64_t block_bytes, int64_t arena_bytes,
                                std::unique_ptr<HostSharedMemory>* out, std::string* why_not,
                                std::string* arena_why_not) {
  out->reset();
  if (block_bytes < 64 * static_cast<int64_t>(size)) {  // the same answer on every rank
    *why_not = "staging blocks of " + std::to_string(block_bytes) + " bytes are too small for " +
               std::to_string(size) + " ranks (CHORUS_SHM_BLOCK_BYTES >= 64 per rank)";
    return Status::ok();
  }
  const Layout layout(size, block_bytes, arena_bytes);
  char name[kNameBytes] = {0};
  std::string error;  // why this rank could not make or map the segment
  if (rank == 0) {
    const StatusOr<std::string> made = make_segment(layout.total, layout.per_rank, layout.head, layout.arena > 0, size);
    if (made.is_ok()) std::snprintf(name, sizeof name, "%s", made.value().c_str());
    else error = made.status().message();
  }
  Status s = comm.broadcast(name, sizeof name, 0);
  if (!s.is_ok()) {
    if (rank == 0 && name[0] != 0) shm_unlink(name);  // nobody will map it
    return s;
  }
  void* base = MAP_FAILED;
  int fd = -1;
  if (name[0] != 0) {
    const StatusOr<void*> mapped_here = map_segment(name, layout.total, layout.arena > 0, &fd);
    if (mapped_here.is_ok()) base = mapped_here.value();
    else error = mapped_here.status().message();
  }
  bool mapped = false;
  s = all_agree(comm, base != MAP_FAILED, &mapped);
  // Mapped everywhere, or given up: the name is no longer needed either way,
  // so a crash from here on leaves nothing in /dev/shm.
  if (rank == 0 && name[0] != 0) shm_unlink(name);
  if (!mapped) {
    if (base != MAP_FAILED) munmap(base, layout.total);
    if (fd >= 0) close(fd);
    if (!s.is_ok()) return s;  // the communicator failed, not the arenas' size: no retry
    if (layout.arena > 0) {
      // Perhaps only the arenas' size was refused: try once more without them.
      const std::string arena_error = error.empty() ? "shared memory could not be set up on another rank" : error;
      s = create(comm, rank, size, block_bytes, 0, out, why_not, arena_why_not);
      if (*out) *arena_why_not = "no shared-memory arenas (" + arena_error + ")";
      return s;
    }
    *why_not = "shared memory could not be set up" + (error.empty() ? std::string(" on another rank") : ": " + error);
    return Status::ok();
  }
  std::unique_ptr<HostSharedMemory> shm(new HostSharedMemory());
  shm->assemble(layout, base, fd, rank, size, block_bytes);
  // Every rank's counter and head are ready before anyone reads them.
  int32_t token = 0, sum = 0;
  s = comm.allreduce(&token, &sum, 1, DataType::kInt32, ReduceOp::kSum);
  if (!s.is_ok()) return s;
  *out = std::move(shm);
  return Status::ok();
}

void HostSharedMemory::assemble(const Layout& layout, void* base, int fd, int rank, int size, int64_t block_bytes) {
  const size_t total = layout.total;
  mapping_ = std::shared_ptr<void>(base, [total, fd](void* p) {
    munmap(p, total);
    if (fd >= 0) close(fd);
  });
  slots_.rank = rank;
  slots_.size = size;
  slots_.block_bytes = block_bytes;
  slots_.arena_bytes = static_cast<int64_t>(layout.arena);
  for (int k = 0; k < size; ++k) {
    char* at = static_cast<char*>(base) + layout.per_rank * static_cast<size_t>(k);
    slots_.arrivals.push_back(reinterpret_cast<std::atomic<uint64_t>*>(at));
    slots_.staging.push_back(at + kCounterBytes + layout.exchange);
    slots_.exchange.push_back(at + kCounterBytes);
    if (layout.arena > 0) slots_.arenas.push_back(at + layout.head);
  }
  const size_t mine = layout.per_rank * static_cast<size_t>(rank);
  if (layout.arena > 0) {
    arena_ = std::make_shared<SharedArena>(slots_.arenas[static_cast<size_t>(rank)],
                                           static_cast<int64_t>(layout.arena), mapping_, fd,
                                           static_cast<int64_t>(mine + layout.head));
  }
  // Each rank starts its own counter and touches its own head (no page
  // faults on the hot path).
  new (slots_.arrivals[static_cast<size_t>(rank)]) std::atomic<uint64_t>(0);
  std::memset(static_cast<char*>(base) + mine + kCounterBytes, 0, layout.head - kCounterBytes);
}

}  // namespace chorus::detail
