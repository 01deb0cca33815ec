#pragma once
// Runs an allgather response on this rank. One tensor goes from its input
// straight into its output. Several (fused by the coordinator) travel as
// one data-plane operation, as in Horovod: this rank's inputs are packed
// into one buffer, one allgatherv moves every rank's packed bytes, and each
// tensor's rows are unpacked from every rank's block into its output.

#include <vector>

#include "comm/communicator.h"
#include "common/logging.h"
#include "fusion/fusion_buffer.h"
#include "negotiation/messages.h"
#include "engine/tensor_entry.h"

namespace chorus::detail {

class AllgatherExecutor {
 public:
  AllgatherExecutor(Communicator& comm, int rank, int world_size, const Logger& logger)
      : comm_(comm), rank_(rank), world_size_(world_size), logger_(logger) {}

  /// Runs `response` on `entries` (in its name order); one status per entry,
  /// since a rank whose output allocation failed fails that tensor alone.
  std::vector<Status> run(const Response& response, std::vector<TensorEntry>& entries);

 private:
  Status run_fused(const Response& response, std::vector<TensorEntry>& entries, std::vector<Status>* each);

  Communicator& comm_;
  int rank_;
  int world_size_;
  const Logger& logger_;
  FusionBuffer send_;  // this rank's packed inputs
  FusionBuffer recv_;  // every rank's packed inputs, rank after rank
};

}  // namespace chorus::detail
