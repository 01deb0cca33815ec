#pragma once
// The zero-copy path of the shared-memory allreduce: when every rank's
// tensors of a call lie in its arena (shared memory that every rank on the
// host maps), each rank reduces its 1/n part of the concatenation reading
// every rank's inputs where they lie, and writes the result straight into
// every rank's outputs. Each byte is read once and written once, against
// about twice that through staging; the other ranks' memory is found from
// the addresses each rank publishes in its exchange area at the call's start
// (exchange_area.h).

#include <cstdint>
#include <vector>

#include "chorus/types.h"
#include "dataplane/reduce_piece.h"

namespace chorus::detail {

/// Calls of at least this many bytes write their results with streaming
/// stores, zero-copy and staged alike. Measured here on the zero-copy path:
/// 16 MiB took 2.8-3.1 ms with them against 4.1-4.6 ms without, while at
/// 1-4 MiB (results still cached) they cost 5-25 % (docs/performance.md).
constexpr int64_t kZeroCopyStreamingBytes = 8 << 20;
/// Results are made (reduced or scaled) in steps of this many bytes, small
/// enough to stay in L1 until they are streamed out.
constexpr int64_t kZeroCopyStepBytes = 16 << 10;

/// Reduces elements [begin, begin + length) of the concatenation, over the
/// ranks whose pieces are `ranks` (in rank order, each covering the same
/// total), and writes the result to every rank's outputs: op over ranks of
/// (input * prescale), then * scale. `streaming`: with streaming stores,
/// ordered before the function returns. `scratch` is grown as needed.
void reduce_part_into_all(const std::vector<std::vector<ReducePiece>>& ranks, int64_t begin, int64_t length,
                          DataType dtype, ReduceOp op, double prescale, PostScale scale, bool streaming,
                          std::vector<char>* scratch);

}  // namespace chorus::detail
