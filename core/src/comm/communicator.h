#pragma once
// The data plane: collectives on contiguous bytes that every rank calls in
// the same order. Implementations: MPI (comm/mpi), in-process threads
// (comm/loopback); the ring and NCCL plug in here too.

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus::detail {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// In-place allreduce of `count` elements. Average must arrive here as Sum.
  virtual Status allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) = 0;
  /// In-place broadcast of `bytes` bytes from `root`.
  virtual Status broadcast(void* buffer, int64_t bytes, int root) = 0;
  /// Allreduces run on the pipelined ring so far (0 for plain backends).
  virtual int64_t ring_allreduces() const { return 0; }
  /// Name for logs and --check-build, e.g. "mpi".
  virtual const char* name() const = 0;
};

}  // namespace chorus::detail
