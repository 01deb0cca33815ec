#pragma once
// Owning wrappers for the one stream per device the GPU data plane launches
// on, and for the events that order it against producers and tell the
// completion side when a batch is done. Creation reports errors as Status;
// destruction never throws (a failure there is only logged by the caller's
// next call, as CUDA keeps it sticky).

#include <cuda_runtime_api.h>

#include "chorus/status.h"

namespace chorus::detail::gpu {

class DeviceStream {
 public:
  DeviceStream() = default;
  ~DeviceStream();
  DeviceStream(DeviceStream&& other) noexcept;
  DeviceStream& operator=(DeviceStream&& other) noexcept;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  /// A non-blocking stream (it never waits for the legacy default stream) on
  /// `device` at the highest priority, so our copies and collectives overtake
  /// the framework's compute kernels (as Horovod does).
  static Status create(int device, DeviceStream* out);

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  void reset();
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
};

class DeviceEvent {
 public:
  DeviceEvent() = default;
  ~DeviceEvent();
  DeviceEvent(DeviceEvent&& other) noexcept;
  DeviceEvent& operator=(DeviceEvent&& other) noexcept;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;

  /// An event without timing (cheaper to record and query) on `device`.
  /// Events are reused: one released earlier on that device is handed out
  /// again (a recorded event is only ever waited on at its record, so reuse
  /// is safe), which saves a create and a destroy (several microseconds
  /// each) per tensor enqueued. Only a new event makes `device` current.
  static Status create(int device, DeviceEvent* out);

  /// Marks the current end of `stream`'s work.
  Status record(cudaStream_t stream);
  /// Makes `stream` wait for this event on the device; the host never blocks.
  Status make_wait(cudaStream_t stream) const;
  /// OK when the recorded work is done, in_progress while it runs, an error
  /// (naming cudaEventQuery) when the work failed. Never blocks.
  Status query() const;

  cudaEvent_t get() const { return event_; }

 private:
  void reset();
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

}  // namespace chorus::detail::gpu
