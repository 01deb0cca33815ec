#pragma once
// MPI's own collectives on a private communicator, counts chunked so
// tensors past 2^31 elements work: the transport's collectives
// (comm/communicator.h) of the MPI backend.

#include <mpi.h>

#include "comm/communicator.h"
#include "comm/mpi/mpi_types.h"

namespace chorus::detail {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, const MpiTypes& types) : comm_(comm), types_(types) {}
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) override;
  Status broadcast(void* buffer, int64_t bytes, int root) override;
  Status allgatherv(const void* input, void* output, const std::vector<int64_t>& rows, int64_t row_bytes) override;
  Status alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                   const std::vector<int64_t>& recv_rows, int64_t row_bytes) override;
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype,
                       ReduceOp op) override;
  const char* name() const override { return "mpi"; }

 private:
  MPI_Comm comm_;
  const MpiTypes& types_;
};

}  // namespace chorus::detail
