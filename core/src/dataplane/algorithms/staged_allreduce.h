#pragma once
// The staged path of the shared-memory allreduce, one call at a time: the
// three steps of one block (copy in, reduce, copy out; see
// shared_memory_allreduce.h for the pipeline that runs them with one
// barrier per block). Every rank owns two staging blocks in the shared
// slots; part k of every block is staged at k * stride, whatever the
// block's length, so a rank's own part never moves.

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "dataplane/reduce_piece.h"
#include "comm/shm/shared_slots.h"
#include "dataplane/algorithms/piece_walk.h"

namespace chorus::detail {

class StagedCall {
 public:
  /// Block b of the call is staged in staging block `first_block + b`
  /// (mod 2). `scratch` and `prescaled` are grown as needed.
  StagedCall(const SharedSlots& slots, const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op,
             double prescale, PostScale scale, int64_t first_block, std::vector<char>* scratch,
             std::vector<char>* prescaled);

  /// Not ok when a staging block cannot hold one element per rank (the same
  /// answer on every rank: the block size is agreed).
  Status check() const;
  int64_t count() const { return spans_.total(); }
  int64_t blocks() const { return blocks_; }
  bool streaming() const { return streaming_; }

  /// This rank's contribution to every other rank's part of block b.
  void copy_in(int64_t b);
  /// Own part of block b: reduced once, here, for everyone, in rank order
  /// (like the zero-copy and single-copy paths, so all give the same bits).
  void reduce(int64_t b);
  /// The other parts of block b, from the ranks that reduced them.
  void copy_out(int64_t b);

 private:
  char* block(int rank, int64_t b) const;
  int64_t first_of(int64_t b) const { return b * block_elems_; }
  int64_t length_of(int64_t b) const;
  void write_out(char* out, const char* result, int64_t take);

  const SharedSlots& slots_;
  const PieceSpans spans_;
  const DataType dtype_;
  const ReduceOp op_;
  const double prescale_;
  const PostScale scale_;
  const int64_t esize_, first_block_;
  int64_t stride_ = 0, block_elems_ = 0, blocks_ = 0, step_ = 1;
  bool streaming_ = false;
  std::vector<char>& scratch_;
  std::vector<char>& prescaled_;
};

}  // namespace chorus::detail
