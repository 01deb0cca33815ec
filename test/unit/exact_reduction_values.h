#pragma once
// Inputs whose reduction is exact in every dtype for up to 8 ranks, and the
// expected results, and the dtype/op pairs to try: shared by the data-plane
// algorithm tests.

#include <algorithm>
#include <cstdint>

#include "kernels/reduce_kernels.h"
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

/// Calls f(dtype, op) for every dtype and every op it supports.
template <class F>
void for_each_dtype_and_op(F&& f) {
  const DataType dtypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64,
                             DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                             DataType::kFloat64, DataType::kBool};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  for (DataType dt : dtypes) {
    for (ReduceOp op : ops) {
      if (detail::reduction_supported(dt, op)) f(dt, op);
    }
  }
}

}  // namespace chorus::test
