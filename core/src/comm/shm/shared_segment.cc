#include "comm/shm/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/status_or.h"

namespace chorus::detail {

namespace {

constexpr size_t kNameBytes = 96;

// Rank 0: a new segment with every part's head reserved; its name, or what
// failed. A random part in the name: no clash with a leftover or with
// another job whose rank 0 had the same pid (another PID namespace).
StatusOr<std::string> make_segment(const SegmentShape& shape) {
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
  if (rc == 0 && shape.sparse_tail) {
    step = "ftruncate";
    rc = ftruncate(fd, static_cast<off_t>(shape.total())) == 0 ? 0 : errno;
  }
  // fallocate, not ftruncate alone: a full /dev/shm fails here, not as SIGBUS later.
  for (int k = 0; rc == 0 && k < shape.ranks; ++k) {
    step = "posix_fallocate";
    rc = posix_fallocate(fd, static_cast<off_t>(shape.per_rank * static_cast<size_t>(k)),
                         static_cast<off_t>(shape.head));
  }
  if (fd >= 0) close(fd);
  if (rc == 0) return std::string(name);
  if (fd >= 0) shm_unlink(name);
  return Status::unknown_error(std::string(step) + " of a " + std::to_string(shape.total()) +
                               "-byte segment in /dev/shm: " + std::strerror(rc));
}

// Maps the segment `name`, checking it is the one rank 0 made; its address,
// or what failed. `*fd` stays open only when `keep_fd`.
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

Status share_segment(Communicator& comm, int rank, const SegmentShape& shape, bool keep_fd, SegmentMapping* mapping,
                     bool* mapped, std::string* error) {
  *mapping = SegmentMapping{};
  *mapped = false;
  char name[kNameBytes] = {0};
  if (rank == 0) {
    const StatusOr<std::string> made = make_segment(shape);
    if (made.is_ok()) std::snprintf(name, sizeof name, "%s", made.value().c_str());
    else *error = made.status().message();
  }
  Status s = comm.broadcast(name, sizeof name, 0);
  if (!s.is_ok()) {
    if (rank == 0 && name[0] != 0) shm_unlink(name);  // nobody will map it
    return s;
  }
  void* base = MAP_FAILED;
  int fd = -1;
  if (name[0] != 0) {
    const StatusOr<void*> mapped_here = map_segment(name, shape.total(), keep_fd, &fd);
    if (mapped_here.is_ok()) base = mapped_here.value();
    else *error = mapped_here.status().message();
  }
  // Every rank's answer to "did it work here?": all yes, or all give up.
  int32_t mine = base != MAP_FAILED ? 1 : 0, all = 0;
  s = comm.allreduce(&mine, &all, 1, DataType::kInt32, ReduceOp::kMin);
  *mapped = s.is_ok() && all == 1;
  // Mapped everywhere, or given up: the name is no longer needed either way,
  // so a crash from here on leaves nothing in /dev/shm.
  if (rank == 0 && name[0] != 0) shm_unlink(name);
  if (!*mapped) {
    if (base != MAP_FAILED) munmap(base, shape.total());
    if (fd >= 0) close(fd);
    return s;
  }
  *mapping = SegmentMapping{base, fd};
  return Status::ok();
}

}  // namespace chorus::detail
