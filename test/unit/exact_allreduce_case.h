#pragma once
// One rank's buffers for a data-plane allreduce test on exact values
// (exact_reduction_values.h), and the count of wrong elements in its result:
// shared by the ring and the hierarchical allreduce tests.

#include <cmath>
#include <cstdint>
#include <vector>

#include "typed_values.h"
#include "dataplane/algorithms/ring_allreduce.h"
#include "exact_reduction_values.h"

namespace chorus::test {

struct ExactAllreduceCase {
  ExactAllreduceCase(int64_t count, DataType dt, ReduceOp op, int rank, int64_t scratch_bytes, bool in_place)
      : count(count), dt(dt), op(op), in_place(in_place),
        buf(static_cast<size_t>(count * dtype_size(dt)) + 1), out(buf.size(), 0),
        scratch(static_cast<size_t>(scratch_bytes) + 1) {
    for (int64_t i = 0; i < count; ++i) store(buf.data(), i, dt, exact_input(op, dt, rank, i));
    original = buf;
  }
  char* input() { return buf.data(); }
  char* result() { return in_place ? buf.data() : out.data(); }

  /// Elements of the result that differ from the allreduce over `size`
  /// ranks times scale / divisor, plus one when out of place changed the input.
  int64_t wrong(int size, double scale, int64_t divisor) {
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i) {
      double want = exact_result(op, dt, size, i) * scale / double(divisor);
      if (!is_floating(dt)) want = std::trunc(want);
      n += load(result(), i, dt) != want;
    }
    return n + (!in_place && buf != original ? 1 : 0);
  }

  const int64_t count;
  const DataType dt;
  const ReduceOp op;
  const bool in_place;
  std::vector<char> buf, out, scratch, original;
};

inline detail::RingOptions ring_options(int64_t segment_bytes, double scale, int64_t divisor) {
  detail::RingOptions options;
  options.segment_bytes = segment_bytes;
  options.scale_factor = scale;
  options.scale_divisor = divisor;
  return options;
}

}  // namespace chorus::test
