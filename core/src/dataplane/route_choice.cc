#include "dataplane/route_choice.h"

namespace chorus::detail {

const char* route_name(AllreduceRoute route) {
  switch (route) {
    case AllreduceRoute::kAlone: return "alone";
    case AllreduceRoute::kTransport: return "transport";
    case AllreduceRoute::kRing: return "ring";
    case AllreduceRoute::kSharedMemory: return "shm";
    case AllreduceRoute::kSingleCopy: return "cma";
    case AllreduceRoute::kAdasum: return "adasum";
    case AllreduceRoute::kHierarchical: return "hierarchical";
  }
  return "?";
}

namespace {

// Large calls read the other ranks' memory once rather than stage it twice.
AllreduceRoute on_one_host(const RuntimeOptions& o, int64_t bytes) {
  const int64_t single_copy_from = o.shm_single_copy_threshold_bytes;
  return single_copy_from >= 0 && bytes >= single_copy_from ? AllreduceRoute::kSingleCopy
                                                            : AllreduceRoute::kSharedMemory;
}

}  // namespace

AllreduceRoute choose_allreduce_route(const RuntimeOptions& o, int64_t bytes, int world_size, bool shared_memory,
                                      bool hierarchical) {
  if (world_size <= 1) return AllreduceRoute::kAlone;
  if (bytes <= 0) return AllreduceRoute::kTransport;
  if (hierarchical) return AllreduceRoute::kHierarchical;
  switch (o.allreduce_algorithm) {
    case AllreduceAlgorithm::kRing: return AllreduceRoute::kRing;
    case AllreduceAlgorithm::kMpi: return AllreduceRoute::kTransport;
    case AllreduceAlgorithm::kSharedMemory:  // without it, init() already failed; the ring is a safe answer
      return shared_memory ? on_one_host(o, bytes) : AllreduceRoute::kRing;
    case AllreduceAlgorithm::kAuto:
      if (shared_memory && bytes >= o.shm_threshold_bytes) return on_one_host(o, bytes);
      return bytes >= o.ring_threshold_bytes ? AllreduceRoute::kRing : AllreduceRoute::kTransport;
  }
  return AllreduceRoute::kTransport;
}

AllreduceRoute choose_allreduce_route(const RuntimeOptions& o, ReduceOp op, int64_t bytes, int world_size,
                                      bool shared_memory, bool hierarchical) {
  if (op != ReduceOp::kAdasum) return choose_allreduce_route(o, bytes, world_size, shared_memory, hierarchical);
  return world_size <= 1 ? AllreduceRoute::kAlone : AllreduceRoute::kAdasum;
}

}  // namespace chorus::detail
