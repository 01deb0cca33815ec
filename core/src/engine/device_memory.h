#pragma once
// What the runtime needs of a GPU, without CUDA types: a point on a stream
// (DeviceMark: the producer's ready point, the end of a staged copy) and the
// copies of the staged path. The CUDA implementation is
// core/src/device/cuda/cuda_device_memory.cc; the unit tests use a fake over host
// memory (test/unit/fake_device_memory.h), so the staged path's bookkeeping
// is tested without a GPU.

#include <cstdint>
#include <memory>

#include "chorus/status.h"
#include "common/status_or.h"

namespace chorus::detail {

/// A point in one stream's work (a recorded CUDA event).
class DeviceMark {
 public:
  virtual ~DeviceMark() = default;
  /// OK once the work before the point has finished, InProgress before, an
  /// error naming the call when that work failed. Never blocks.
  virtual Status query() const = 0;
  /// The cudaEvent_t, for device work that must wait on it (the NCCL
  /// operations' stream); nullptr for fakes.
  virtual void* native() const = 0;
};

/// Copies between a device and pinned host memory on the implementation's
/// own stream per device (the staging stream), in the order they are asked
/// for; nothing here blocks the calling thread on the device.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  /// Records the current end of `stream`'s work on `device` (a cudaStream_t
  /// as void*; nullptr: the default stream). Called at enqueue, on the
  /// framework's thread, and by the staged worker for an output it had
  /// allocated on a stream.
  virtual StatusOr<std::shared_ptr<DeviceMark>> record(int device, void* stream) = 0;
  /// Makes `device`'s staging stream wait for `mark` (on the device).
  virtual Status wait(int device, const DeviceMark& mark) = 0;
  /// Queues a copy on `device`'s staging stream.
  virtual Status copy_to_host(int device, void* host, const void* device_ptr, int64_t bytes) = 0;
  virtual Status copy_to_device(int device, void* device_ptr, const void* host, int64_t bytes) = 0;
  /// The current end of `device`'s staging stream.
  virtual StatusOr<std::shared_ptr<DeviceMark>> mark(int device) = 0;
  /// Makes `device` current on the calling thread, one of Chorus's own (the
  /// background thread, the staged worker), before it allocates pinned
  /// memory or asks an OpContext for a device output: the framework's
  /// allocator then works on the tensor's device, and no context is made on
  /// GPU 0. Such a thread keeps it current from then on; the other calls
  /// put back only the current device of a thread Chorus never set (the
  /// framework's, at enqueue).
  virtual Status use_device(int device) = 0;
  /// Page-locked host memory (so the copies run asynchronously), freed when
  /// the last reference goes.
  virtual StatusOr<std::shared_ptr<void>> allocate_pinned(int64_t bytes) = 0;
};

}  // namespace chorus::detail
