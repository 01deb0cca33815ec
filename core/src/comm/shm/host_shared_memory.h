#pragma once
// The shared staging memory of the shared-memory allreduce for a group of
// ranks that all run on this host, whatever the transport: one POSIX
// shared-memory segment that rank 0 creates and every rank maps, agreed over
// the transport's own collectives (comm/communicator.h). Its name is removed
// as soon as every rank has mapped it (or given up), so a job that dies
// after start leaves nothing in /dev/shm; unmapping needs no other rank, so
// shutdown stays free of collectives.
//
// With an arena size, every rank's part of the segment also holds its two
// exchange areas and, after them, its arena: sparse, its pages reserved as
// tensors are allocated from it (comm/shm/shared_arena.h). A rank keeps the
// segment's file open for that, and the mapping lives on while tensors from
// its arena do.

#include <cstdint>
#include <memory>
#include <string>

#include "chorus/status.h"
#include "comm/communicator.h"
#include "comm/shm/shared_arena.h"
#include "comm/shm/shared_slots.h"

namespace chorus::detail {

class HostSharedMemory {
 public:
  /// Collective over `comm` (rank `rank` of `size`), whose ranks the caller
  /// knows to share this host. Leaves *out empty, with an OK status, when it
  /// cannot be set up; `*why_not` then says why. Every rank gets the same
  /// outcome (a rank that cannot map the segment makes all go without).
  /// `arena_bytes` 0: no arenas. Arenas that cannot be set up (the segment's
  /// size refused) leave the staging alone: `*arena_why_not` says why.
  static Status create(Communicator& comm, int rank, int size, int64_t block_bytes, int64_t arena_bytes,
                       std::unique_ptr<HostSharedMemory>* out, std::string* why_not, std::string* arena_why_not);
  HostSharedMemory(const HostSharedMemory&) = delete;
  HostSharedMemory& operator=(const HostSharedMemory&) = delete;

  const SharedSlots& slots() const { return slots_; }
  /// Sets SharedSlots::while_waiting (before the slots are handed out).
  void set_while_waiting(std::function<void()> hook) { slots_.while_waiting = std::move(hook); }
  /// This rank's arena; nullptr without arenas.
  const std::shared_ptr<SharedArena>& arena() const { return arena_; }

 private:
  struct Layout;
  HostSharedMemory() = default;
  void assemble(const Layout& layout, void* base, int fd, int rank, int size, int64_t block_bytes);
  std::shared_ptr<void> mapping_;  // unmaps (and closes the file) when the last user goes
  SharedSlots slots_;
  std::shared_ptr<SharedArena> arena_;
};

}  // namespace chorus::detail
