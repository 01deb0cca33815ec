#pragma once
// One CUDA response on the staged path (device/staged_device_operations.h),
// as data: the caller's device entries, the same operations over pinned host
// memory, and the copies between them. stage_in runs on the background
// thread and never waits for the device; stage_out runs on the staged
// worker after the host collective.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/logging.h"
#include "negotiation/messages.h"
#include "engine/device_memory.h"
#include "device/staging_pool.h"
#include "engine/tensor_entry.h"

namespace chorus::detail {

struct StagedJob {
  Response response;
  std::vector<TensorEntry> entries;  ///< the caller's, on the device, in the response's order
  std::vector<TensorEntry> host;     ///< the same operations on the staging buffer
  std::shared_ptr<char> staging;     ///< every input, at `offsets`
  std::vector<int64_t> offsets;
  std::vector<std::shared_ptr<DeviceMark>> copied_in;  ///< one per device the inputs are on
  std::vector<std::shared_ptr<Tensor>> device_outputs; ///< allocated after negotiation (allgather, ...)
  Status queued;                     ///< why the copies in could not be queued, or OK
  std::string names;                 ///< "'a', 'b'", for messages
  std::chrono::steady_clock::time_point handed_over;  ///< to the worker: the timeline's QUEUE starts here
};

/// Each tensor's offset in the staging buffer (64-byte aligned, in order);
/// returns the buffer's size.
int64_t staging_layout(const std::vector<TensorEntry>& entries, std::vector<int64_t>* offsets);

/// Leases the staging buffer, queues on each input's device: wait for its
/// ready point, copy it in; records where the copies end. The host entries
/// reduce in place on the staging buffer (allreduce, broadcast) or get their
/// outputs from `host_outputs` (allgather, alltoall, reducescatter).
StagedJob stage_in(const Response& response, std::vector<TensorEntry> entries, DeviceMemory& memory,
                   StagingPool& pool, const std::shared_ptr<OpContext>& host_outputs);

/// After the host collective: queues the copy of each successful result to
/// its device (allocating the outputs known only now through the entry's
/// OpContext); a tensor that cannot be copied back gets its error in
/// `each`. Returns where the copies end, one mark per device.
StatusOr<std::vector<std::shared_ptr<DeviceMark>>> stage_out(StagedJob& job, std::vector<Status>& each,
                                                             DeviceMemory& memory, const Logger& logger);

/// Host memory for the host collective's outputs, from the staging pool.
std::shared_ptr<OpContext> staging_op_context(StagingPool& pool);

}  // namespace chorus::detail
