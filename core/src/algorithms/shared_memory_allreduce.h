#pragma once
// Allreduce among ranks that share memory (one host): every rank stages its
// data in its own block of a shared region, reduces its 1/n part of each
// block reading the other ranks' blocks directly, and copies the other
// parts of the result out of their blocks. No messages and no copies
// through the kernel on the data path (waiting yields the core), and the
// tensors of a fused response are read and written where they lie (no
// fusion-buffer pack and unpack).
//
// Per block of the data:
//   1. copy in: this rank's contribution to the other ranks' parts
//      (prescaled) into its staging block;
//   2. reduce: own part = own input op every other rank's staged copy of
//      it, written to the own staging block and to the output;
//   3. copy out: the other parts from their owners' staging blocks.
// Pipelined over blocks with one barrier (shared arrival counters) per
// block: while block b is copied in, block b-1 is reduced and block b-2
// copied out. Staging alternates between two blocks per rank and the block
// count runs on across calls, so what a rank writes in a phase is never
// what another rank reads in it (see the phase loop).
// Each element is reduced by exactly one rank, so all ranks get the same bits.

#include <atomic>
#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "comm/reduce_piece.h"

namespace chorus::detail {

/// The allreduce of a group of one: each piece's input, scaled, into its
/// output (prescale, then scale), with no staging.
void allreduce_pieces_alone(const std::vector<ReducePiece>& pieces, DataType dtype, double prescale,
                            PostScale scale);

/// The shared memory of one group of ranks, as this rank sees it.
struct SharedSlots {
  int rank = 0, size = 1;
  /// Bytes of one staging block, a multiple of 64 (element and cache-line
  /// alignment of both blocks); each rank owns two.
  int64_t block_bytes = 0;
  /// Per rank: its two staging blocks (2 * block_bytes bytes).
  std::vector<char*> staging;
  /// Per rank: how many barriers it has reached (only its owner writes it).
  std::vector<std::atomic<uint64_t>*> arrivals;
};

/// Staging for ranks that are threads of one process (in-process ranks,
/// tests): plain heap memory and counters, rank after rank.
class HeapStaging {
 public:
  HeapStaging(int size, int64_t block_bytes)
      : size_(size), block_bytes_(block_bytes), memory_(static_cast<size_t>(size * 2 * block_bytes)),
        arrivals_(static_cast<size_t>(size)) {}
  SharedSlots slots(int rank) {
    SharedSlots s;
    s.rank = rank;
    s.size = size_;
    s.block_bytes = block_bytes_;
    for (int k = 0; k < size_; ++k) {
      s.staging.push_back(memory_.data() + k * 2 * block_bytes_);
      s.arrivals.push_back(&arrivals_[static_cast<size_t>(k)]);
    }
    return s;
  }

 private:
  const int size_;
  const int64_t block_bytes_;
  std::vector<char> memory_;
  std::vector<std::atomic<uint64_t>> arrivals_;
};

class SharedMemoryAllreduce {
 public:
  explicit SharedMemoryAllreduce(SharedSlots slots);

  /// Allreduces the concatenation of `pieces` (each read from `input` and
  /// written to `output`, which may be the same memory) over every rank of
  /// the group: result = op over ranks of (input * prescale), then
  /// * scale.factor / scale.divisor. Every rank passes the same total count
  /// (its pieces may be cut differently). Average must arrive as Sum.
  Status allreduce(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op, double prescale,
                   PostScale scale);

  int size() const { return slots_.size; }

 private:
  void barrier();
  char* block(int rank, int64_t index) const;

  const SharedSlots slots_;
  uint64_t barriers_ = 0;  // barriers this rank passed; the same on every rank between calls
  int64_t block_sequence_ = 0;  // blocks run so far, across calls: picks the staging block
};

}  // namespace chorus::detail
