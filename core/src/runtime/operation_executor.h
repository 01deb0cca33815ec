#pragma once
// Runs one Response on this rank: packs the tensors into the fusion buffer
// (scaling during the copy), calls the data plane, unpacks (scaling and
// averaging during the copy), and completes the entries. Allgathers have
// their own executor (runtime/allgather_executor.h).

#include <vector>

#include "chorus/options.h"
#include "comm/communicator.h"
#include "common/logging.h"
#include "fusion/fusion_buffer.h"
#include "runtime/allgather_executor.h"
#include "negotiation/messages.h"
#include "runtime/shared_stats.h"
#include "runtime/tensor_entry.h"
#include "timeline/timeline.h"

namespace chorus::detail {

class OperationExecutor {
 public:
  OperationExecutor(Communicator& comm, int rank, int world_size, SharedStats& stats, Timeline& timeline,
                    const Logger& logger)
      : comm_(comm),
        rank_(rank),
        world_size_(world_size),
        stats_(stats),
        timeline_(timeline),
        logger_(logger),
        allgather_(comm, rank, world_size, logger) {}

  /// Runs `response` on `entries` (in the response's name order) and
  /// completes each one, successfully or with the error.
  void execute(const Response& response, std::vector<TensorEntry> entries);

 private:
  Status allreduce(std::vector<TensorEntry>& entries);
  Status broadcast(TensorEntry& entry);
  Status reducescatter(TensorEntry& entry);
  Status alltoall(const Response& response, TensorEntry& entry);
  void record_allgather(size_t tensors, const std::vector<Status>& each);
  using Clock = std::chrono::steady_clock;
  void record_allreduce(size_t tensors, int64_t bytes, const char* algorithm, Clock::time_point start,
                        Clock::time_point packed, Clock::time_point reduced);

  Communicator& comm_;
  int rank_;
  int world_size_;
  SharedStats& stats_;
  Timeline& timeline_;
  const Logger& logger_;
  FusionBuffer fusion_;
  AllgatherExecutor allgather_;
};

}  // namespace chorus::detail
