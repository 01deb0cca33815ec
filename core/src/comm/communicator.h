#pragma once
// The data plane: collectives that every rank calls in the same order.
// Implementations: MPI (comm/mpi), in-process threads (comm/loopback); the
// algorithm choice (comm/allreduce_choice) wraps MPI with the ring and the
// shared-memory allreduce; NCCL plugs in here too.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "comm/reduce_piece.h"

namespace chorus::detail {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// Allreduce of `count` elements from `input` into `output` (the same
  /// pointer for in place), then `scale`. Average must arrive here as Sum.
  virtual Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                           PostScale scale = {}) = 0;
  /// True when allreduce_pieces() can reduce a fused allreduce of `bytes`
  /// bytes where its tensors lie; otherwise the caller packs them into one
  /// buffer for allreduce(). The answer depends on `bytes` only, and for
  /// those bytes allreduce() runs the same algorithm: one rank may call
  /// allreduce() (its tensors lie together) while another calls
  /// allreduce_pieces() in the same collective.
  virtual bool reduces_pieces(int64_t bytes) const {
    (void)bytes;
    return false;
  }
  /// Allreduce of the concatenation of `pieces` (inputs times `prescale`),
  /// then `scale`; only where reduces_pieces() said so. Average must arrive as Sum.
  virtual Status allreduce_pieces(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op,
                                  double prescale, PostScale scale) {
    (void)pieces, (void)dtype, (void)op, (void)prescale, (void)scale;
    return Status::unknown_error(std::string("internal: the ") + name() + " data plane cannot reduce scattered tensors");
  }
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
  /// Allreduces run through shared memory so far.
  virtual int64_t shared_memory_allreduces() const { return 0; }
  /// Of those, the ones that reduced the tensors where they lie (every
  /// rank's in its shared-memory arena), with no staging.
  virtual int64_t zero_copy_allreduces() const { return 0; }
  /// Name for logs and --check-build, e.g. "mpi".
  virtual const char* name() const = 0;
};

}  // namespace chorus::detail
