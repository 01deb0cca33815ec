#include "comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <vector>
#include <string>


namespace chorus::detail {

namespace {
// MPI counts are int: move at most this many elements per call.
constexpr int64_t kMaxChunk = int64_t{1} << 30;
}  // namespace

Status MpiCommunicator::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) {
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
  return Status::ok();
}

Status MpiCommunicator::allgatherv(const void* input, void* output, const std::vector<int64_t>& rows,
                                   int64_t row_bytes) {
  // Counts and displacements are in rows (a contiguous type of row_bytes),
  // so tensors far past 2^31 bytes still fit MPI's int counts.
  std::vector<int> counts(rows.size()), displs(rows.size());
  int64_t offset = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] > INT_MAX || offset > INT_MAX) {
      return Status::invalid_argument("allgather of " + std::to_string(offset + rows[r]) +
                                      " rows exceeds what one MPI_Allgatherv call can address (2^31 rows)");
    }
    counts[r] = static_cast<int>(rows[r]);
    displs[r] = static_cast<int>(offset);
    offset += rows[r];
  }
  if (row_bytes <= 0 || offset == 0) return Status::ok();
  if (row_bytes > INT_MAX) return Status::invalid_argument("allgather rows of more than 2^31 bytes are not supported");
  MPI_Datatype row;
  MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &row);
  MPI_Type_commit(&row);
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  const int rc = MPI_Allgatherv(input, counts[static_cast<size_t>(rank)], row, output, counts.data(), displs.data(),
                                row, comm_);
  MPI_Type_free(&row);
  return rc == MPI_SUCCESS ? Status::ok() : Status::unknown_error("MPI_Allgatherv failed");
}

namespace {
// MPI int counts and displacements, in rows; false past 2^31 rows.
bool to_int_layout(const std::vector<int64_t>& rows, std::vector<int>* counts, std::vector<int>* displs) {
  counts->resize(rows.size());
  displs->resize(rows.size());
  int64_t offset = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] > INT_MAX || offset > INT_MAX) return false;
    (*counts)[r] = static_cast<int>(rows[r]);
    (*displs)[r] = static_cast<int>(offset);
    offset += rows[r];
  }
  return true;
}
}  // namespace

Status MpiCommunicator::alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                                  const std::vector<int64_t>& recv_rows, int64_t row_bytes) {
  std::vector<int> sc, sd, rc, rd;
  if (!to_int_layout(send_rows, &sc, &sd) || !to_int_layout(recv_rows, &rc, &rd)) {
    return Status::invalid_argument("alltoall of more than 2^31 rows exceeds one MPI_Alltoallv call");
  }
  if (row_bytes <= 0) return Status::ok();
  if (row_bytes > INT_MAX) return Status::invalid_argument("alltoall rows of more than 2^31 bytes are not supported");
  MPI_Datatype row;
  MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &row);
  MPI_Type_commit(&row);
  const int result = MPI_Alltoallv(input, sc.data(), sd.data(), row, output, rc.data(), rd.data(), row, comm_);
  MPI_Type_free(&row);
  return result == MPI_SUCCESS ? Status::ok() : Status::unknown_error("MPI_Alltoallv failed");
}

Status MpiCommunicator::reducescatter(const void* input, void* output, const std::vector<int64_t>& counts,
                                      DataType dtype, ReduceOp op) {
  std::vector<int> recv(counts.size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > INT_MAX) {
      return Status::invalid_argument("reducescatter of " + std::to_string(counts[r]) +
                                      " elements per rank exceeds one MPI_Reduce_scatter call (2^31)");
    }
    recv[r] = static_cast<int>(counts[r]);
    total += counts[r];
  }
  if (total == 0) return Status::ok();
  const int rc = MPI_Reduce_scatter(input, output, recv.data(), types_.datatype(dtype), types_.op(dtype, op), comm_);
  return rc == MPI_SUCCESS ? Status::ok() : Status::unknown_error("MPI_Reduce_scatter failed");
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
