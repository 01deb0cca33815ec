#pragma once
// What a data plane needs to know about a result's scaling and about the
// tensors of a fused allreduce that need not lie together in memory.

#include <cstdint>

namespace chorus::detail {

/// Scaling of an allreduce's result: result * factor / divisor, done inside
/// the data plane where it can ride on a pass it makes anyway.
struct PostScale {
  double factor = 1.0;
  int64_t divisor = 1;
  bool is_identity() const { return factor == 1.0 && divisor == 1; }
};

/// One tensor of a fused allreduce: `count` elements read from `input`,
/// the result written to `output` (the same memory for in place).
struct ReducePiece {
  const void* input = nullptr;
  void* output = nullptr;
  int64_t count = 0;
};

}  // namespace chorus::detail
