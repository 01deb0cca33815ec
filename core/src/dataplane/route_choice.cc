#include "dataplane/route_choice.h"

namespace chorus::detail {

const char* route_name(AllreduceRoute route) {
  switch (route) {
    case AllreduceRoute::kAlone: return "alone";
    case AllreduceRoute::kTransport: return "mpi";
    case AllreduceRoute::kRing: return "ring";
    case AllreduceRoute::kSharedMemory: return "shm";
  }
  return "?";
}

AllreduceRoute choose_allreduce_route(const RuntimeOptions& o, int64_t bytes, int world_size, bool shared_memory) {
  if (world_size <= 1) return AllreduceRoute::kAlone;
  if (bytes <= 0) return AllreduceRoute::kTransport;
  switch (o.allreduce_algorithm) {
    case AllreduceAlgorithm::kRing: return AllreduceRoute::kRing;
    case AllreduceAlgorithm::kMpi: return AllreduceRoute::kTransport;
    case AllreduceAlgorithm::kSharedMemory:  // without it, init() already failed; the ring is a safe answer
      return shared_memory ? AllreduceRoute::kSharedMemory : AllreduceRoute::kRing;
    case AllreduceAlgorithm::kAuto:
      if (shared_memory && bytes >= o.shm_threshold_bytes) return AllreduceRoute::kSharedMemory;
      return bytes >= o.ring_threshold_bytes ? AllreduceRoute::kRing : AllreduceRoute::kTransport;
  }
  return AllreduceRoute::kTransport;
}

}  // namespace chorus::detail
