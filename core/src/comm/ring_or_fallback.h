#pragma once
// The allreduce algorithm choice: a Communicator that runs large allreduces
// on the pipelined ring (algorithms/ring_allreduce) over a PeerLink and
// everything else (small allreduces, broadcast) on a fallback Communicator
// (MPI's own collectives), as RuntimeOptions say.

#include <cstdint>

#include "chorus/options.h"
#include "comm/communicator.h"
#include "comm/peer_link.h"
#include "fusion/fusion_buffer.h"

namespace chorus::detail {

/// True when an allreduce of `bytes` on `world_size` ranks takes the ring.
bool use_ring(AllreduceAlgorithm algorithm, int64_t ring_threshold_bytes, int64_t bytes, int world_size);

class RingOrFallbackCommunicator final : public Communicator {
 public:
  RingOrFallbackCommunicator(Communicator& fallback, PeerLink& link, const RuntimeOptions& options)
      : fallback_(fallback), link_(link), options_(options) {}
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                   PostScale scale) override;
  Status broadcast(void* buffer, int64_t bytes, int root) override { return fallback_.broadcast(buffer, bytes, root); }
  Status allgatherv(const void* input, void* output, const std::vector<int64_t>& rows, int64_t row_bytes) override {
    return fallback_.allgatherv(input, output, rows, row_bytes);
  }
  Status alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                   const std::vector<int64_t>& recv_rows, int64_t row_bytes) override {
    return fallback_.alltoallv(input, send_rows, output, recv_rows, row_bytes);
  }
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype,
                       ReduceOp op) override {
    return fallback_.reducescatter(input, output, counts, dtype, op);
  }
  const char* name() const override { return "ring+mpi"; }
  int64_t ring_allreduces() const override { return ring_calls_; }

 private:
  Communicator& fallback_;
  PeerLink& link_;
  const RuntimeOptions options_;
  FusionBuffer scratch_;  // persistent and pre-touched: no page faults on the hot path
  int64_t ring_calls_ = 0;
};

}  // namespace chorus::detail
