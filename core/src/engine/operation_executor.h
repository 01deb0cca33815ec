#pragma once
// Runs one Response on this rank: hands its tensors to the data plane
// (dataplane/data_plane.h), which decides how the bytes move, allocates
// outputs, and completes the entries. Allgathers have their own executor
// (engine/allgather_executor.h). Responses on CUDA tensors go to the device
// operations (engine/device_operations.h), made on the first one, never to
// the CPU data plane.

#include <vector>

#include "chorus/options.h"
#include "comm/backend.h"
#include "common/logging.h"
#include "dataplane/data_plane.h"
#include "engine/allgather_executor.h"
#include "engine/device_support.h"
#include "negotiation/messages.h"
#include "engine/shared_stats.h"
#include "engine/tensor_entry.h"
#include "timeline/timeline.h"

namespace chorus::detail {

class OperationExecutor {
 public:
  /// After `backend.start()`, on its background thread.
  OperationExecutor(Backend& backend, const RuntimeOptions& options, SharedStats& stats, Timeline& timeline,
                    const Logger& logger, DeviceSupport device = {})
      : backend_(backend),
        options_(options),
        device_(std::move(device)),
        data_(backend, options),
        rank_(backend.topology().rank),
        world_size_(backend.topology().size),
        stats_(stats),
        timeline_(timeline),
        logger_(logger),
        allgather_(data_.collectives(), rank_, world_size_, logger) {}

  /// Runs `response` on `entries` (in the response's name order) and
  /// completes each one, successfully or with the error.
  void execute(const Response& response, std::vector<TensorEntry> entries);

  /// Runs a response on host tensors and returns each entry's result,
  /// completing none (the staged device path completes the device entries
  /// after its copy back).
  std::vector<Status> run(const Response& response, std::vector<TensorEntry>& entries);

  /// The device operations' first asynchronous fault, or OK.
  Status device_fault() const { return device_ops_ ? device_ops_->fault() : Status::ok(); }
  /// Device responses launched and not yet finished (DeviceOperations::in_flight).
  size_t device_in_flight() const { return device_ops_ ? device_ops_->in_flight() : 0; }
  /// At the end of the loop: after a device fault on this rank, fails what
  /// the device operations still hold with `why` (abort); otherwise lets
  /// them finish what every rank negotiated. Either way returns once nothing
  /// of this rank's runs on the device.
  void end_device(const Status& why);

 private:
  void run_on_device(const Response& response, std::vector<TensorEntry> entries);
  Status allreduce(std::vector<TensorEntry>& entries);
  Status broadcast(TensorEntry& entry);
  Status reducescatter(TensorEntry& entry);
  Status alltoall(const Response& response, TensorEntry& entry);
  void record_allgather(size_t tensors, const std::vector<Status>& each);
  using Clock = std::chrono::steady_clock;
  void record_allreduce(size_t tensors, int64_t bytes, const AllreduceOutcome& outcome, Clock::time_point start);

  Backend& backend_;
  const RuntimeOptions& options_;
  DeviceSupport device_;
  std::unique_ptr<DeviceOperations> device_ops_;  // made on the first CUDA response
  Status device_error_;                           // why they could not be made
  DataPlane data_;
  FusedAllreduce fused_;
  int rank_;
  int world_size_;
  SharedStats& stats_;
  Timeline& timeline_;
  const Logger& logger_;
  AllgatherExecutor allgather_;
};

}  // namespace chorus::detail
