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
// Each element is reduced by exactly one rank, in rank order, so all ranks
// get the same bits, and the zero-copy path (same order) the same as staging.
//
// Zero-copy path: when every rank's tensors of a call lie in its arena
// (SharedSlots::arenas), nothing is staged; see zero_copy_allreduce.h. Each
// rank says so in its exchange area during the first phase, and after its
// barrier all ranks read the same answers and take the same path.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "comm/reduce_piece.h"
#include "comm/shared_slots.h"

namespace chorus::detail {

/// The allreduce of a group of one: each piece's input, scaled, into its
/// output (prescale, then scale), with no staging.
void allreduce_pieces_alone(const std::vector<ReducePiece>& pieces, DataType dtype, double prescale,
                            PostScale scale);

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
  /// Calls that took the zero-copy path so far.
  int64_t zero_copy_calls() const { return zero_copy_calls_; }

 private:
  void barrier();
  char* block(int rank, int64_t index) const;
  char* exchange_area(int rank) const;
  int ranks_in_arena() const;
  bool totals_agree() const;
  void reduce_in_place_of_all(int64_t count, DataType dtype, ReduceOp op, double prescale, PostScale scale);

  const SharedSlots slots_;
  uint64_t barriers_ = 0;  // barriers this rank passed; the same on every rank between calls
  int64_t block_sequence_ = 0;  // blocks run so far, across calls: picks the staging block
  uint64_t calls_ = 0;          // calls so far, the same on every rank: picks the exchange area
  int64_t zero_copy_calls_ = 0;
  std::vector<char> scratch_;     // the zero-copy path's running result; scaled results on their way out
  std::vector<char> prescaled_;  // the staged path's own input, prescaled
  std::vector<std::vector<ReducePiece>> published_;  // every rank's pieces of the zero-copy call
};

}  // namespace chorus::detail
