#pragma once
// Pinned host buffers for the staged device path, reused: a lease takes the
// smallest free buffer that fits (or allocates one, its size rounded up to a
// power of two so the sizes of a training loop's buckets settle on a few
// buffers), and the buffer returns to the pool when the lease's last
// reference goes. Thread-safe: the background thread leases, the staged
// worker releases.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status_or.h"
#include "engine/device_memory.h"

namespace chorus::detail {

class StagingPool {
 public:
  /// `memory` must outlive every lease.
  explicit StagingPool(DeviceMemory& memory) : memory_(memory), state_(std::make_shared<State>()) {}

  /// At least `bytes` of pinned host memory (a zero-byte lease is valid).
  StatusOr<std::shared_ptr<char>> lease(int64_t bytes);
  /// Never frees the buffers (after a device fault: a copy that never
  /// finished may still write them, and freeing may block on the device).
  void leak_buffers();
  /// Buffers allocated so far (reuse keeps this small).
  int64_t allocations() const;
  /// The size a request of `bytes` allocates.
  static int64_t rounded(int64_t bytes);

 private:
  struct Buffer {
    int64_t bytes;
    std::shared_ptr<void> memory;
  };
  struct State {
    std::mutex mu;
    std::vector<Buffer> free;
    int64_t allocations = 0;
    bool leak = false;
    ~State();
  };
  DeviceMemory& memory_;
  std::shared_ptr<State> state_;  // shared with the leases, which return buffers to it
};

}  // namespace chorus::detail
