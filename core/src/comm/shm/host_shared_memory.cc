#include "comm/shm/host_shared_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <vector>

#include "comm/shm/shared_segment.h"

namespace chorus::detail {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "arrival counters must work across processes");

namespace {

constexpr size_t kCounterBytes = 128;  // own cache lines: no false sharing between ranks

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

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
  SegmentShape shape;
  shape.per_rank = layout.per_rank;
  shape.head = layout.head;
  shape.ranks = size;
  shape.sparse_tail = layout.arena > 0;
  SegmentMapping mapping;
  bool mapped = false;
  std::string error;  // why this rank could not make or map the segment
  // Arenas reserve pages through the file, so it stays open for them.
  Status s = share_segment(comm, rank, shape, layout.arena > 0, &mapping, &mapped, &error);
  if (!mapped) {
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
  shm->assemble(layout, mapping.base, mapping.fd, rank, size, block_bytes);
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
