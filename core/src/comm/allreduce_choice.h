#pragma once
// The allreduce algorithm choice: a Communicator that runs each allreduce
// through shared memory (algorithms/shared_memory_allreduce, when every rank
// is on this host), on the pipelined ring (algorithms/ring_allreduce, over a
// PeerLink) or on a fallback Communicator (MPI's own collectives), as
// RuntimeOptions and the size say. Everything else goes to the fallback.

#include <cstdint>

#include "chorus/options.h"
#include "comm/communicator.h"
#include "comm/peer_link.h"
#include "fusion/fusion_buffer.h"

namespace chorus::detail {

class SharedMemoryAllreduce;

enum class AllreduceRoute { kFallback, kRing, kSharedMemory };

/// Where an allreduce of `bytes` on `world_size` ranks goes; `shared_memory`
/// says whether every rank can reach the others' memory.
AllreduceRoute choose_allreduce(const RuntimeOptions& options, int64_t bytes, int world_size, bool shared_memory);

class AllreduceChoiceCommunicator final : public Communicator {
 public:
  /// `shared` may be nullptr (ranks on several hosts, or not wanted).
  AllreduceChoiceCommunicator(Communicator& fallback, PeerLink& link, SharedMemoryAllreduce* shared,
                              const RuntimeOptions& options)
      : fallback_(fallback), link_(link), shared_(shared), options_(options) {}
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                   PostScale scale) override;
  bool reduces_pieces(int64_t bytes) const override;
  Status allreduce_pieces(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op, double prescale,
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
  const char* name() const override { return shared_ ? "shm+ring+mpi" : "ring+mpi"; }
  int64_t ring_allreduces() const override { return ring_calls_; }
  int64_t shared_memory_allreduces() const override { return shared_calls_; }
  int64_t zero_copy_allreduces() const override;

 private:
  AllreduceRoute route(int64_t bytes) const;

  Communicator& fallback_;
  PeerLink& link_;
  SharedMemoryAllreduce* shared_;
  const RuntimeOptions options_;
  FusionBuffer scratch_;  // persistent and pre-touched: no page faults on the hot path
  int64_t ring_calls_ = 0;
  int64_t shared_calls_ = 0;
};

}  // namespace chorus::detail
