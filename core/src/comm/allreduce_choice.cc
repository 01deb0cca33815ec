#include "comm/allreduce_choice.h"

#include "algorithms/ring_allreduce.h"
#include "algorithms/shared_memory_allreduce.h"

namespace chorus::detail {

AllreduceRoute choose_allreduce(const RuntimeOptions& o, int64_t bytes, int world_size, bool shared_memory) {
  if (world_size <= 1 || bytes <= 0) return AllreduceRoute::kFallback;
  switch (o.allreduce_algorithm) {
    case AllreduceAlgorithm::kRing: return AllreduceRoute::kRing;
    case AllreduceAlgorithm::kMpi: return AllreduceRoute::kFallback;
    case AllreduceAlgorithm::kSharedMemory:  // without it, init() already failed; the ring is a safe answer
      return shared_memory ? AllreduceRoute::kSharedMemory : AllreduceRoute::kRing;
    case AllreduceAlgorithm::kAuto:
      if (shared_memory && bytes >= o.shm_threshold_bytes) return AllreduceRoute::kSharedMemory;
      return bytes >= o.ring_threshold_bytes ? AllreduceRoute::kRing : AllreduceRoute::kFallback;
  }
  return AllreduceRoute::kFallback;
}

AllreduceRoute AllreduceChoiceCommunicator::route(int64_t bytes) const {
  return choose_allreduce(options_, bytes, link_.size(), shared_ != nullptr);
}

Status AllreduceChoiceCommunicator::allreduce(const void* input, void* output, int64_t count, DataType dtype,
                                              ReduceOp op, PostScale scale) {
  const int64_t bytes = count * dtype_size(dtype);
  switch (route(bytes)) {
    case AllreduceRoute::kFallback: return fallback_.allreduce(input, output, count, dtype, op, scale);
    case AllreduceRoute::kSharedMemory: {
      ++shared_calls_;
      return shared_->allreduce({ReducePiece{input, output, count}}, dtype, op, 1.0, scale);
    }
    case AllreduceRoute::kRing: break;
  }
  RingOptions ring;
  ring.segment_bytes = options_.ring_segment_bytes;
  ring.scale_factor = scale.factor;
  ring.scale_divisor = scale.divisor;
  void* scratch = scratch_.reserve(ring_scratch_bytes(count, dtype, link_.size()));
  ++ring_calls_;
  return ring_allreduce(link_, input, output, count, dtype, op, scratch, ring);
}

int64_t AllreduceChoiceCommunicator::zero_copy_allreduces() const {
  return shared_ ? shared_->zero_copy_calls() : 0;
}

// A single rank copies each tensor to its output; shared memory reduces
// them where they lie. Either way no fusion buffer.
bool AllreduceChoiceCommunicator::reduces_pieces(int64_t bytes) const {
  return link_.size() <= 1 || route(bytes) == AllreduceRoute::kSharedMemory;
}

Status AllreduceChoiceCommunicator::allreduce_pieces(const std::vector<ReducePiece>& pieces, DataType dtype,
                                                     ReduceOp op, double prescale, PostScale scale) {
  if (link_.size() <= 1) {
    allreduce_pieces_alone(pieces, dtype, prescale, scale);
    return Status::ok();
  }
  int64_t count = 0;
  for (const ReducePiece& p : pieces) count += p.count;
  if (!reduces_pieces(count * dtype_size(dtype))) {  // the contract in communicator.h
    return Communicator::allreduce_pieces(pieces, dtype, op, prescale, scale);
  }
  ++shared_calls_;
  return shared_->allreduce(pieces, dtype, op, prescale, scale);
}

}  // namespace chorus::detail
