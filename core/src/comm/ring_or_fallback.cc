#include "comm/ring_or_fallback.h"

#include "algorithms/ring_allreduce.h"

namespace chorus::detail {

bool use_ring(AllreduceAlgorithm algorithm, int64_t ring_threshold_bytes, int64_t bytes, int world_size) {
  if (world_size <= 1 || bytes <= 0) return false;
  switch (algorithm) {
    case AllreduceAlgorithm::kRing: return true;
    case AllreduceAlgorithm::kMpi: return false;
    case AllreduceAlgorithm::kAuto: return bytes >= ring_threshold_bytes;
  }
  return false;
}

Status RingOrFallbackCommunicator::allreduce(const void* input, void* output, int64_t count, DataType dtype,
                                             ReduceOp op, PostScale scale) {
  const int64_t bytes = count * dtype_size(dtype);
  if (!use_ring(options_.allreduce_algorithm, options_.ring_threshold_bytes, bytes, link_.size())) {
    return fallback_.allreduce(input, output, count, dtype, op, scale);
  }
  RingOptions ring;
  ring.segment_bytes = options_.ring_segment_bytes;
  ring.scale_factor = scale.factor;
  ring.scale_divisor = scale.divisor;
  void* scratch = scratch_.reserve(ring_scratch_bytes(count, dtype, link_.size()));
  ++ring_calls_;
  return ring_allreduce(link_, input, output, count, dtype, op, scratch, ring);
}

}  // namespace chorus::detail
