#pragma once
// A transport's own collectives, which every rank calls in the same order:
// MPI's (comm/mpi), Chorus's TCP mesh's (comm/tcp/tcp_collectives.h),
// in-process rendezvous (comm/loopback). The data plane
// (dataplane/data_plane.h) builds on these, on the peer links and on the
// shared-memory slots; it does the scaling, Average's division and the
// choice of algorithm, so none of that is here.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus::detail {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// Allreduce of `count` elements from `input` into `output` (the same
  /// pointer for in place). `op` is never Average (the data plane sums).
  virtual Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) = 0;
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
  /// receives elements [sum(counts[0..r)), +counts[r]) of the result in
  /// `output`. `op` is never Average.
  virtual Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts,
                               DataType dtype, ReduceOp op) = 0;
  /// Name for logs and --check-build, e.g. "mpi".
  virtual const char* name() const = 0;
};

}  // namespace chorus::detail
