#include "comm/mpi/mpi_shared_memory.h"

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


namespace chorus::detail {

namespace {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "arrival counters must work across processes");

constexpr size_t kCounterBytes = 128;  // own cache lines: no false sharing between ranks

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// Every rank's answer to "did it work here?": all true or all see a failure.
bool all_agree(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace

Status MpiSharedMemory::create(MPI_Comm comm, int64_t block_bytes, int64_t arena_bytes,
                               std::unique_ptr<MpiSharedMemory>* out, std::string* why_not,
                               std::string* arena_why_not) {
  out->reset();
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_size = 0;
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  if (local_size != size) {  // the same answer on every rank
    *why_not = "the ranks run on more than one host";
    return Status::ok();
  }

  if (block_bytes < 64 * static_cast<int64_t>(size)) {  // the same answer on every rank
    *why_not = "staging blocks of " + std::to_string(block_bytes) + " bytes are too small for " +
               std::to_string(size) + " ranks (CHORUS_SHM_BLOCK_BYTES >= 64 per rank)";
    return Status::ok();
  }

  // Per rank: counters, exchange areas and staging blocks (reserved up
  // front), then the arena (reserved as it is handed out).
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t exchange = 2 * static_cast<size_t>(kExchangeAreaBytes);
  const size_t head = round_up(kCounterBytes + exchange + 2 * static_cast<size_t>(block_bytes), page);
  const size_t arena = round_up(static_cast<size_t>(std::max<int64_t>(arena_bytes, 0)), page);
  const size_t per_rank = head + arena;
  const size_t total = per_rank * static_cast<size_t>(size);
  char name[96] = {0};
  std::string error;
  if (rank == 0) {
    // A random part in the name: no clash with a leftover or with another
    // job whose rank 0 had the same pid (another PID namespace).
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
    if (rc == 0 && arena > 0) {
      step = "ftruncate";
      rc = ftruncate(fd, static_cast<off_t>(total)) == 0 ? 0 : errno;
    }
    // fallocate, not ftruncate alone: a full /dev/shm fails here, not as SIGBUS later.
    for (int k = 0; rc == 0 && k < size; ++k) {
      step = "posix_fallocate";
      rc = posix_fallocate(fd, static_cast<off_t>(per_rank * static_cast<size_t>(k)), static_cast<off_t>(head));
    }
    if (fd >= 0) close(fd);
    if (rc != 0) {
      if (fd >= 0) shm_unlink(name);
      error = std::string(step) + " of a " + std::to_string(total) + "-byte segment in /dev/shm: " + std::strerror(rc);
      name[0] = 0;
    }
  }
  MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm);
  void* base = MAP_FAILED;
  int fd = -1;
  if (name[0] != 0) {
    fd = shm_open(name, O_RDWR, 0600);
    struct stat st {};
    if (fd < 0) {
      error = std::string("shm_open(") + name + "): " + std::strerror(errno);
    } else if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != total) {
      error = std::string(name) + " is not the segment rank 0 made (size " + std::to_string(st.st_size) + ")";
    } else {
      base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) error = std::string("mmap: ") + std::strerror(errno);
    }
    // Kept open only to reserve arena pages.
    if (fd >= 0 && (base == MAP_FAILED || arena == 0)) {
      close(fd);
      fd = -1;
    }
  }
  const bool mapped = all_agree(comm, base != MAP_FAILED);
  // Mapped everywhere, or given up: the name is no longer needed either way,
  // so a crash from here on leaves nothing in /dev/shm.
  if (rank == 0 && name[0] != 0) shm_unlink(name);
  if (!mapped) {
    if (base != MAP_FAILED) munmap(base, total);
    if (fd >= 0) close(fd);
    if (arena > 0) {
      // Perhaps only the arenas' size was refused: try once more without them.
      std::string arena_error = error.empty() ? "shared memory could not be set up on another rank" : error;
      Status s = create(comm, block_bytes, 0, out, why_not, arena_why_not);
      if (*out) *arena_why_not = "no shared-memory arenas (" + arena_error + ")";
      return s;
    }
    *why_not = "shared memory could not be set up" + (error.empty() ? std::string(" on another rank") : ": " + error);
    return Status::ok();
  }
  std::unique_ptr<MpiSharedMemory> shm(new MpiSharedMemory());
  shm->mapping_ = std::shared_ptr<void>(base, [total, fd](void* p) {
    munmap(p, total);
    if (fd >= 0) close(fd);
  });
  SharedSlots& slots = shm->slots_;
  slots.rank = rank;
  slots.size = size;
  slots.block_bytes = block_bytes;
  slots.arena_bytes = static_cast<int64_t>(arena);
  for (int k = 0; k < size; ++k) {
    char* at = static_cast<char*>(base) + per_rank * static_cast<size_t>(k);
    slots.arrivals.push_back(reinterpret_cast<std::atomic<uint64_t>*>(at));
    slots.staging.push_back(at + kCounterBytes + exchange);
    slots.exchange.push_back(at + kCounterBytes);
    if (arena > 0) slots.arenas.push_back(at + head);
  }
  if (arena > 0) {
    shm->arena_ = std::make_shared<SharedArena>(slots.arenas[static_cast<size_t>(rank)], static_cast<int64_t>(arena),
                                                shm->mapping_, fd,
                                                static_cast<int64_t>(per_rank * static_cast<size_t>(rank) + head));
  }
  // Each rank starts its own counter and touches its own head (no page
  // faults on the hot path) before anyone reads them.
  new (slots.arrivals[static_cast<size_t>(rank)]) std::atomic<uint64_t>(0);
  std::memset(static_cast<char*>(base) + per_rank * static_cast<size_t>(rank) + kCounterBytes, 0,
              head - kCounterBytes);
  MPI_Barrier(comm);
  *out = std::move(shm);
  return Status::ok();
}

}  // namespace chorus::detail
