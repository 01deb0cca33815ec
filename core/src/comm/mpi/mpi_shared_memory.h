#pragma once
// The shared staging memory of the shared-memory allreduce for the ranks of
// an MPI communicator that all run on this host: one POSIX shared-memory
// segment that rank 0 creates and every rank maps. Its name is removed as
// soon as every rank has mapped it (or given up), so a job that dies after
// start leaves nothing in /dev/shm; unmapping needs no other rank, so
// shutdown stays free of collectives.
//
// With an arena size, every rank's part of the segment also holds its two
// exchange areas and, after them, its arena: sparse, its pages reserved as
// tensors are allocated from it (comm/shared_arena.h). A rank keeps the
// segment's file open for that, and the mapping lives on while tensors from
// its arena do.

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "comm/shared_slots.h"
#include "chorus/status.h"
#include "comm/shared_arena.h"

namespace chorus::detail {

class MpiSharedMemory {
 public:
  /// Collective over `comm`. Leaves *out empty, with an OK status, when the
  /// ranks span hosts; `*why_not` then says so. Every rank gets the same
  /// outcome (a rank that cannot map the segment makes all go without).
  /// `arena_bytes` 0: no arenas. Arenas that cannot be set up (the
  /// segment's size refused) leave the staging alone: `*arena_why_not` says why.
  static Status create(MPI_Comm comm, int64_t block_bytes, int64_t arena_bytes,
                       std::unique_ptr<MpiSharedMemory>* out, std::string* why_not, std::string* arena_why_not);
  MpiSharedMemory(const MpiSharedMemory&) = delete;
  MpiSharedMemory& operator=(const MpiSharedMemory&) = delete;

  const SharedSlots& slots() const { return slots_; }
  /// This rank's arena; nullptr without arenas.
  const std::shared_ptr<SharedArena>& arena() const { return arena_; }

 private:
  MpiSharedMemory() = default;
  std::shared_ptr<void> mapping_;  // unmaps (and closes the file) when the last user goes
  SharedSlots slots_;
  std::shared_ptr<SharedArena> arena_;
};

}  // namespace chorus::detail
