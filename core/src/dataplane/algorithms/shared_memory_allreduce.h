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
// (SharedSlots::arenas), nothing is staged; see zero_copy_allreduce.h.
// Single-copy path: on calls the route choice gives it (large ones), tensors
// in ordinary memory are read and written across processes instead; see
// single_copy_allreduce.h. Each rank publishes where its tensors lie in its
// exchange area (exchange_area.h) during the first phase, and after its
// barrier all ranks read the same answers and take the same path.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "dataplane/reduce_piece.h"
#include "comm/shm/shared_slots.h"
#include "dataplane/algorithms/single_copy_allreduce.h"
#include "dataplane/algorithms/staged_allreduce.h"

namespace chorus::detail {

/// The allreduce of a group of one: each piece's input, scaled, into its
/// output (prescale, then scale), with no staging.
void allreduce_pieces_alone(const std::vector<ReducePiece>& pieces, DataType dtype, double prescale,
                            PostScale scale);

/// The path a shared-memory call took.
enum class SharedPath { kStaged, kZeroCopy, kSingleCopy };

class SharedMemoryAllreduce {
 public:
  /// `calls`: the cross-memory system calls (tests replace them).
  explicit SharedMemoryAllreduce(SharedSlots slots, CrossMemoryCalls calls = {});

  /// Allreduces the concatenation of `pieces` (each read from `input` and
  /// written to `output`, which may be the same memory) over every rank of
  /// the group: result = op over ranks of (input * prescale), then
  /// * scale.factor / scale.divisor. Every rank passes the same total count
  /// (its pieces may be cut differently) and the same `single_copy`: take
  /// the single-copy path for tensors outside the arenas (when every rank
  /// can reach the others' memory; the first such call finds out, the same
  /// answer on every rank). Average must arrive as Sum.
  Status allreduce(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op, double prescale,
                   PostScale scale, bool single_copy = false);

  int size() const { return slots_.size; }
  /// Calls that took the zero-copy path so far.
  int64_t zero_copy_calls() const { return zero_copy_calls_; }
  /// The path the last call took.
  SharedPath last_path() const { return last_path_; }
  /// Why single copy is off for good ("" while it is not): the first
  /// failure any rank had reaching another's memory.
  const std::string& single_copy_refusal() const { return refusal_; }

 private:
  Status allreduce_waiting(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op, double prescale,
                           PostScale scale, bool single_copy);
  void barrier();
  char* exchange_area(int rank) const;
  SharedPath agreed_path(bool single_copy, int64_t count);
  bool single_copy_available();
  int ranks_in_arena() const;
  bool all_described_alike() const;
  void run_staged_phases(StagedCall& call, int64_t first_phase);
  void reduce_in_place_of_all(int64_t count, DataType dtype, ReduceOp op, double prescale, PostScale scale);
  Status run_single_copy(int64_t count, DataType dtype, ReduceOp op, double prescale, PostScale scale);

  const SharedSlots slots_;
  const CrossMemoryCalls calls_;
  uint64_t barriers_ = 0;  // barriers this rank passed; the same on every rank between calls
  int64_t block_sequence_ = 0;  // blocks run so far, across calls: picks the staging block
  uint64_t calls_made_ = 0;     // calls so far, the same on every rank: picks the exchange area
  int64_t zero_copy_calls_ = 0;
  SharedPath last_path_ = SharedPath::kStaged;
  enum class CrossMemory { kUnknown, kAvailable, kRefused } cross_memory_ = CrossMemory::kUnknown;
  std::string refusal_;
  uint64_t probe_word_ = 0;  // what the others read and write back to learn that they may
  std::vector<char> scratch_;     // running results: zero-copy, single copy, scaled staged results
  std::vector<char> prescaled_;  // the staged path's own input, prescaled
  std::vector<std::vector<ReducePiece>> published_;  // every rank's pieces of a zero-copy call
  SingleCopyRanks ranks_;                            // every rank's pieces of a single-copy call
};

}  // namespace chorus::detail
