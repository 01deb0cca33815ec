#include "comm/shm/shared_memory_start.h"

#include <string>

#include "common/logging.h"

namespace chorus::detail {

namespace {
void warn_on_rank0(const Topology& topo, const RuntimeOptions& options, const std::string& text) {
  if (topo.rank != 0) return;
  Logger logger(options.log_level);
  logger.set_rank(topo.rank);
  CHORUS_LOG(logger, kWarning) << text;
}
}  // namespace

Status start_host_shared_memory(Communicator& comm, const Topology& topo, const RuntimeOptions& options,
                                std::unique_ptr<HostSharedMemory>* out) {
  out->reset();
  const AllreduceAlgorithm algo = options.allreduce_algorithm;
  const bool wanted = algo == AllreduceAlgorithm::kSharedMemory || algo == AllreduceAlgorithm::kAuto;
  if (!wanted || topo.size <= 1) return Status::ok();
  std::string why_not, arena_why_not;
  if (topo.local_size != topo.size) {  // the same answer on every rank
    why_not = "the ranks run on more than one host";
  } else {
    const int64_t arena_bytes = topo.scope.id == 0 ? options.shm_arena_bytes : 0;
    Status s = HostSharedMemory::create(comm, topo.rank, topo.size, options.shm_block_bytes, arena_bytes, out,
                                        &why_not, &arena_why_not);
    if (!s.is_ok()) return s;
  }
  if (*out) {
    if (!arena_why_not.empty()) {
      warn_on_rank0(topo, options, arena_why_not + ": allocate_shared_host() returns ordinary memory");
    }
  } else if (algo == AllreduceAlgorithm::kSharedMemory) {
    return Status::precondition_error("CHORUS_ALLREDUCE_ALGO=shm needs every rank on one host with shared memory, "
                                      "but " + why_not + "; use auto, ring or mpi");
  } else if (topo.local_size == topo.size) {
    // One host, yet no shared memory (e.g. a full /dev/shm): say so once,
    // since allreduce is then slower than it could be.
    warn_on_rank0(topo, options, "allreduce runs without shared memory on this host: " + why_not);
  }
  return Status::ok();
}

}  // namespace chorus::detail
