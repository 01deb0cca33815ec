#pragma once
// Inputs whose reduction is exact in every dtype for up to 8 ranks, and the
// expected results: shared by the data-plane algorithm tests.

#include <algorithm>
#include <cstdint>

#include "chorus/types.h"

namespace chorus::test {

inline double exact_input(ReduceOp op, DataType dt, int rank, int64_t i) {
  if (dt == DataType::kBool) return ((i + rank) % 3) != 0 ? 1 : 0;
  switch (op) {
    case ReduceOp::kProduct: return double(((i + rank) % 5 == 0) + 1);  // 1s and a few 2s
    case ReduceOp::kMin:
    case ReduceOp::kMax: return double((i * 7 + rank * 3) % 11);
    default: return double(i % 3 + rank);
  }
}

inline double exact_result(ReduceOp op, DataType dt, int size, int64_t i) {
  double acc = exact_input(op, dt, 0, i);
  for (int r = 1; r < size; ++r) {
    const double v = exact_input(op, dt, r, i);
    if (op == ReduceOp::kSum || op == ReduceOp::kAverage) acc += v;
    if (op == ReduceOp::kProduct) acc *= v;
    if (op == ReduceOp::kMin) acc = std::min(acc, v);
    if (op == ReduceOp::kMax) acc = std::max(acc, v);
  }
  return acc;
}

}  // namespace chorus::test
