#include "comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <string>

#include "algorithms/reduce_kernels.h"

namespace chorus::detail {

namespace {
// MPI counts are int: move at most this many elements per call.
constexpr int64_t kMaxChunk = int64_t{1} << 30;
}  // namespace

Status MpiCommunicator::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                  PostScale scale) {
  const MPI_Datatype type = types_.datatype(dtype);
  const MPI_Op mpi_op = types_.op(dtype, op);
  const char* in = static_cast<const char*>(input);
  char* out = static_cast<char*>(output);
  const int64_t esize = dtype_size(dtype);
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(kMaxChunk, count - done);
    const void* send = in == out ? MPI_IN_PLACE : static_cast<const void*>(in + done * esize);
    if (MPI_Allreduce(send, out + done * esize, static_cast<int>(n), type, mpi_op, comm_) != MPI_SUCCESS) {
      return Status::unknown_error("MPI_Allreduce failed");
    }
    done += n;
  }
  if (!scale.is_identity()) scale_copy(output, output, count, dtype, scale.factor, scale.divisor);
  return Status::ok();
}

Status MpiCommunicator::broadcast(void* buffer, int64_t bytes, int root) {
  char* p = static_cast<char*>(buffer);
  for (int64_t done = 0; done < bytes;) {
    const int64_t n = std::min(kMaxChunk, bytes - done);
    if (MPI_Bcast(p + done, static_cast<int>(n), MPI_BYTE, root, comm_) != MPI_SUCCESS) {
      return Status::unknown_error("MPI_Bcast failed");
    }
    done += n;
  }
  return Status::ok();
}

}  // namespace chorus::detail
