#pragma once
// The data plane: collectives on contiguous bytes that every rank calls in
// the same order. Implementations: MPI (comm/mpi), in-process threads
// (comm/loopback); the ring and NCCL plug in here too.

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus::detail {

/// Scaling of an allreduce's result: result * factor / divisor, done inside
/// the data plane where it can ride on a pass it makes anyway.
struct PostScale {
  double factor = 1.0;
  int64_t divisor = 1;
  bool is_identity() const { return factor == 1.0 && divisor == 1; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// Allreduce of `count` elements from `input` into `output` (the same
  /// pointer for in place), then `scale`. Average must arrive here as Sum.
  virtual Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                           PostScale scale = {}) = 0;
  /// In-place broadcast of `bytes` bytes from `root`.
  virtual Status broadcast(void* buffer, int64_t bytes, int root) = 0;
  /// Every rank contributes `rows[rank]` rows of `row_bytes` bytes from
  /// `input`; `output` receives all of them in rank order.
  virtual Status allgatherv(const void* input, void* output, const std::vector<int64_t>& rows,
                            int64_t row_bytes) = 0;
  /// Sends `send_rows[r]` rows of `row_bytes` bytes (consecutive in `input`,
  /// in rank order) to each rank r and receives `recv_rows[r]` rows from each
  /// into `output`, in rank order.
  virtual Status alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                           const std::vector<int64_t>& recv_rows, int64_t row_bytes) = 0;
  /// Reduces `input` (the sum of `counts` elements) over every rank; rank r
  /// receives elements [sum(counts[0..r)), +counts[r]) of the result in `output`.
  virtual Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts,
                               DataType dtype, ReduceOp op) = 0;
  /// Allreduces run on the pipelined ring so far (0 for plain backends).
  virtual int64_t ring_allreduces() const { return 0; }
  /// Name for logs and --check-build, e.g. "mpi".
  virtual const char* name() const = 0;
};

}  // namespace chorus::detail
