#pragma once
// The shared memory of a group of ranks on one host, as the transport lays
// it out (comm/shm/host_shared_memory for processes, HeapStaging for ranks
// that are threads): staging blocks, arrival counters, exchange areas and
// arenas. The algorithms that use it live in dataplane/algorithms.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "comm/shm/shared_arena.h"

namespace chorus::detail {

/// Most non-empty tensors of one call an exchange area can describe; a
/// call with more takes the staging path.
constexpr int64_t kZeroCopyMaxPieces = 1024;
/// Bytes of one exchange area (a rank has two, used by call parity): a
/// 64-byte header and a 24-byte entry per piece, in whole cache lines.
constexpr int64_t kExchangeAreaBytes = (64 + 24 * kZeroCopyMaxPieces + 63) / 64 * 64;

/// The shared memory of one group of ranks, as this rank sees it.
/// Thrown by SharedSlots::while_waiting to give up a wait for a dead rank.
struct SharedWaitAbandoned : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SharedSlots {
  int rank = 0, size = 1;
  /// Bytes of one staging block, a multiple of 64 (element and cache-line
  /// alignment of both blocks); each rank owns two.
  int64_t block_bytes = 0;
  /// Per rank: its two staging blocks (2 * block_bytes bytes).
  std::vector<char*> staging;
  /// Per rank: how many barriers it has reached (only its owner writes it).
  std::vector<std::atomic<uint64_t>*> arrivals;
  /// Per rank: two exchange areas of kExchangeAreaBytes (by call parity)
  /// where it tells where its tensors of a call lie.
  std::vector<char*> exchange;
  /// Per rank: its arena as mapped here, `arena_bytes` long; empty when the
  /// group has none (the same on every rank).
  std::vector<char*> arenas;
  int64_t arena_bytes = 0;
  /// Called by a barrier that has waited long for another rank (between its
  /// 1 ms sleeps), on the thread that owns the transport: the transport's
  /// chance to notice that the rank is dead and end this process, which
  /// could otherwise wait for it forever, or to give up the wait by
  /// throwing SharedWaitAbandoned (the allreduce then fails). Empty: none
  /// (MPI's launcher ends the job; in-process ranks cannot die alone).
  std::function<void()> while_waiting;
};

/// Staging for ranks that are threads of one process (in-process ranks,
/// tests): plain heap memory and counters, rank after rank.
/// With `arena_bytes` > 0 every rank also gets an arena of plain memory.
class HeapStaging {
 public:
  HeapStaging(int size, int64_t block_bytes, int64_t arena_bytes = 0);
  SharedSlots slots(int rank);
  /// Rank `rank`'s arena (nullptr without arenas).
  std::shared_ptr<SharedArena> arena(int rank) const {
    return arenas_.empty() ? nullptr : arenas_[static_cast<size_t>(rank)];
  }

 private:
  const int size_;
  const int64_t block_bytes_, arena_bytes_;
  std::vector<char> memory_;
  std::vector<char> exchange_;
  std::vector<std::atomic<uint64_t>> arrivals_;
  std::vector<std::shared_ptr<SharedArena>> arenas_;
};

}  // namespace chorus::detail
