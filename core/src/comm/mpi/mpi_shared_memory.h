#pragma once
// The shared staging memory of the shared-memory allreduce for the ranks of
// an MPI communicator that all run on this host: one POSIX shared-memory
// segment that rank 0 creates and every rank maps. Its name is removed as
// soon as every rank has mapped it (or given up), so a job that dies after
// start leaves nothing in /dev/shm; unmapping needs no other rank, so
// shutdown stays free of collectives.

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/shared_memory_allreduce.h"
#include "chorus/status.h"

namespace chorus::detail {

class MpiSharedMemory {
 public:
  /// Collective over `comm`. Leaves *out empty, with an OK status, when the
  /// ranks span hosts; `*why_not` then says so. Every rank gets the same
  /// outcome (a rank that cannot map the segment makes all go without).
  static Status create(MPI_Comm comm, int64_t block_bytes, std::unique_ptr<MpiSharedMemory>* out,
                       std::string* why_not);
  ~MpiSharedMemory();
  MpiSharedMemory(const MpiSharedMemory&) = delete;
  MpiSharedMemory& operator=(const MpiSharedMemory&) = delete;

  const SharedSlots& slots() const { return slots_; }

 private:
  MpiSharedMemory(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  void* base_;
  size_t bytes_;
  SharedSlots slots_;
};

}  // namespace chorus::detail
