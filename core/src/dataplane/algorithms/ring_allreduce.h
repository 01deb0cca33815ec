#pragma once
// Pipelined Ring-AllReduce over an abstract PeerLink: reduce-scatter then
// allgather around the ring (send right, receive left), 2(n-1) steps that
// each move 1/n of the data, so every rank sends and receives 2(n-1)/n of
// the buffer whatever n is (any n, not only powers of two).
//
// Pipelining: every chunk is cut into segments. A segment is forwarded to
// the right as soon as it was reduced, while later segments are still on the
// wire, and it is reduced right after it arrived, while it is still in cache.
// Receives are posted before their data can come (reduce-scatter: a step
// early, into scratch; allgather: segment by segment during the step before,
// once the send that reads the same memory finished), so a transport that
// reads as data arrives (TCP) puts it in place instead of in a copy.
// In place or out of place; 64-bit counts; Average must arrive as Sum.

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"
#include "comm/peer_link.h"
#include "dataplane/chunks.h"

namespace chorus::detail {

/// Which steps of the ring run. An allreduce is both halves; the halves
/// alone let a caller put something between them (dataplane/algorithms/
/// hierarchical_allreduce.h): after kReduceScatter rank r holds chunk
/// ring_owned_chunk(r, n), reduced over every rank, in `output` (the other
/// chunks hold partial results); kAllgather starts from there (input must
/// be output) and hands every rank every owned chunk.
enum class RingHalves { kBoth, kReduceScatter, kAllgather };

struct RingOptions {
  /// Bytes per pipelined segment.
  int64_t segment_bytes = 1 << 20;
  /// Tags [tag_base, tag_base + 2(n-1)) are used, one per step.
  int tag_base = 1000;
  /// The result is multiplied by scale_factor / scale_divisor, applied to
  /// each segment right after its last reduction, while it is in cache.
  double scale_factor = 1.0;
  int64_t scale_divisor = 1;
  RingHalves halves = RingHalves::kBoth;
};

/// The chunk rank `rank` of `ranks` holds reduced after the reduce-scatter.
inline int ring_owned_chunk(int rank, int ranks) { return (rank + 1) % ranks; }

/// Scratch bytes ring_allreduce needs for `count` elements of `dtype` on `ranks` ranks.
int64_t ring_scratch_bytes(int64_t count, DataType dtype, int ranks);

/// Allreduces `count` elements of `input` into `output` (the same pointer
/// for in place) over every rank of `link`. Out of place, `input` is only
/// read and the data makes no extra copy. `scratch` holds at least
/// ring_scratch_bytes(...) bytes.
Status ring_allreduce(PeerLink& link, const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                      void* scratch, const RingOptions& options = {});

}  // namespace chorus::detail
