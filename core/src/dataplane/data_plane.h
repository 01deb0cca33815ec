#pragma once
// The data plane: everything between "a response to run" and "bytes moved".
// It owns the algorithm objects (the ring over the backend's peer links, the
// shared-memory allreduce over its slots), the route choice
// (dataplane/route_choice.h), the fused-allreduce strategy (where the bytes
// of several tensors are reduced: in place where they lie, or packed into
// the fusion buffer) and the arithmetic around the reduction: prescale,
// Average as Sum and a divisor, postscale. Every rank computes the same
// thing whatever its memory layout: layout decides only where bytes are
// reduced, never which algorithm runs or where the scaling happens.
//
// Runs on the background thread of its backend only.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"
#include "comm/backend.h"
#include "dataplane/reduce_piece.h"
#include "dataplane/algorithms/hierarchical_allreduce.h"
#include "dataplane/route_choice.h"
#include "fusion/fusion_buffer.h"

namespace chorus::detail {

class SharedMemoryAllreduce;

/// One allreduce, fused or not: the result is op over ranks of
/// (concatenated inputs x prescale), then x postscale (Average: / ranks).
struct FusedAllreduce {
  std::vector<ReducePiece> pieces;  ///< in the response's order; input may equal output
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  double prescale = 1.0, postscale = 1.0;
};

struct AllreduceOutcome {
  using Clock = std::chrono::steady_clock;
  Status status;
  AllreduceRoute route = AllreduceRoute::kAlone;
  bool zero_copy = false;      ///< shared memory read the tensors in every rank's arena
  bool in_place_span = false;  ///< this rank's tensors lay back to back: reduced where they lie
  Clock::time_point packed, reduced;  ///< the pack ended; the reduction ended
  std::string warning;  ///< for the log, once per job on rank 0: why single copy or hierarchical is off
};

class DataPlane {
 public:
  /// After `backend.start()`; keeps references to the backend's transports.
  DataPlane(Backend& backend, const RuntimeOptions& options);
  ~DataPlane();

  AllreduceOutcome allreduce(const FusedAllreduce& op);
  /// Reducescatter of `input` (the sum of `counts` elements, times
  /// `prescale`); this rank's part, times `postscale` (Average: / ranks),
  /// lands in `output`.
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype,
                       ReduceOp op, double prescale, double postscale);
  /// The transport's own collectives: broadcast, allgather, alltoall.
  Communicator& collectives() { return transport_; }
  int world_size() const { return world_size_; }

 private:
  /// `total`: the pieces' elements together.
  Status reduce_contiguous(const FusedAllreduce& op, int64_t total, ReduceOp wire, PostScale scale,
                           AllreduceOutcome* out);
  /// Op Adasum: packs the pieces (half types widened to float32), runs the
  /// Adasum tree with the pieces as the tensors, unpacks with the postscale
  /// (dataplane/adasum_call.cc).
  Status adasum(const FusedAllreduce& op, int64_t total, AllreduceOutcome* out);
  Status reduce_buffer(AllreduceRoute route, const void* in, void* out, int64_t count, DataType dtype, ReduceOp op,
                       PostScale scale);
  /// Whether the hierarchical allreduce carries this job's allreduces: with
  /// CHORUS_HIERARCHICAL_ALLREDUCE on, the first call gathers every rank's
  /// host (a collective: every rank makes it at the same response) and keeps
  /// the verdict; a refusal goes to `warning` once, on rank 0.
  Status hierarchical_usable(bool* usable, std::string* warning);

  Communicator& transport_;
  PeerLink& link_;
  const RuntimeOptions options_;
  const int world_size_;
  const int first_rank_on_host_;
  std::unique_ptr<HostGrid> grid_;  // once the first allreduce asked, with the option on
  std::unique_ptr<SharedMemoryAllreduce> shared_;  // when the ranks share memory
  bool single_copy_refusal_said_ = false;
  FusionBuffer fusion_;                             // packed tensors of the contiguous routes
  FusionBuffer ring_scratch_;                       // persistent and pre-touched: no page faults
};

}  // namespace chorus::detail
