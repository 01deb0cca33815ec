#pragma once
// Adasum (adaptive summation, Horovod's hvd.Adasum) over an abstract
// PeerLink. Two vectors a and b combine as
//   a' = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// (a coefficient stays 1 when its vector's squared norm is below
// sqrt(DBL_MIN), as in Horovod), per tensor: the dot product and the norms
// are those of each tensor of a fused buffer, never of the whole buffer.
//
// The reduction tree, for n ranks, p the largest power of two <= n:
//   1. fold: rank r < n - p combines its vector (a) with rank r + p's (b);
//   2. ranks 0..p-1 combine as a balanced binary tree of contiguous blocks:
//      level L = 1, 2, 4, ... < p combines block [k*2L, k*2L + L) (a) with
//      block [k*2L + L, (k+1)*2L) (b), as Horovod's vector-halving
//      distance-doubling does: at each level a rank exchanges half of its
//      current segment with rank ^ L, and the per-tensor dot products and
//      norms of the pieces are summed over the 2L ranks of the block;
//   3. the segments travel back (distance-halving allgather), and rank
//      r < n - p sends the result to rank r + p.
// For a power of two this is Horovod's tree exactly; step 1 is what lets any
// rank count run (Horovod refuses anything but a power of two).
//
// Every rank gets the same bits: sums over a block are added lower half +
// upper half at each doubling step, so all ranks of a block hold the same
// sums, and each element of the result is computed by one rank.

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "comm/peer_link.h"

namespace chorus::detail {

/// Scratch bytes adasum_allreduce needs for `count` elements of `dtype`.
int64_t adasum_scratch_bytes(int64_t count, DataType dtype);

/// Adasum of `buffer` (float32 or float64, in place) over every rank of
/// `link`. `tensor_counts` cut the buffer into tensors (in order; they sum
/// to the buffer's elements and are the same on every rank); `scratch`
/// holds adasum_scratch_bytes(...) bytes. Tags [tag_base, tag_base + 512).
Status adasum_allreduce(PeerLink& link, void* buffer, const std::vector<int64_t>& tensor_counts, DataType dtype,
                        void* scratch, int tag_base = 3000);

/// The pairwise combination of two whole vectors, per tensor, into `a`
/// (what one node of the tree does; the tests' reference builds on it).
void adasum_combine(void* a, const void* b, const std::vector<int64_t>& tensor_counts, DataType dtype);

}  // namespace chorus::detail
