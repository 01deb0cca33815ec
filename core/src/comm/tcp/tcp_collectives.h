#pragma once
// The TCP transport's own collectives (comm/communicator.h) over the mesh:
// direct exchanges between every pair of ranks, no tree or ring. Every
// element is reduced in rank order (rank 0's value first), by one rank, so
// every rank gets the same bits. They serve the start (agreeing settings,
// the shared-memory name), broadcasts, allgathers, alltoalls and the small
// allreduces below the ring threshold; large allreduces take the data
// plane's ring over the same mesh.

#include "comm/communicator.h"
#include "comm/tcp/tcp_mesh.h"

namespace chorus::detail {

class TcpCollectives final : public Communicator {
 public:
  explicit TcpCollectives(TcpMesh& mesh) : mesh_(mesh) {}
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) override;
  Status broadcast(void* buffer, int64_t bytes, int root) override;
  Status allgatherv(const void* input, void* output, const std::vector<int64_t>& rows, int64_t row_bytes) override;
  Status alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                   const std::vector<int64_t>& recv_rows, int64_t row_bytes) override;
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype,
                       ReduceOp op) override;
  const char* name() const override { return "tcp"; }

 private:
  struct Part {
    int peer;
    char* data;
    int64_t bytes;
  };
  /// Posts every receive, then every send, then waits for all of them.
  Status exchange(const std::vector<Part>& sends, const std::vector<Part>& recvs);
  TcpMesh& mesh_;
};

}  // namespace chorus::detail
