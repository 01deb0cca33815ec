#pragma once
// Maps Chorus dtypes and reduce ops to MPI. float16, bfloat16 and bool have
// no MPI reduction of the right meaning, so they get 2-byte / 1-byte types and
// user-defined ops that run Chorus's own kernels (float32 accumulation).

#include <mpi.h>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus::detail {

class MpiTypes {
 public:
  /// Creates the custom types and ops (call on the MPI thread).
  Status create();
  /// Frees them (call on the MPI thread before the runtime stops).
  void free();

  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;

 private:
  MPI_Datatype half_ = MPI_DATATYPE_NULL;  // 2 opaque bytes: float16 and bfloat16
  MPI_Op fp16_ops_[5] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  MPI_Op bf16_ops_[5] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  MPI_Op bool_and_ = MPI_OP_NULL;
  MPI_Op bool_or_ = MPI_OP_NULL;
};

}  // namespace chorus::detail
