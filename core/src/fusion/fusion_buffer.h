#pragma once
// The persistent host buffer fused tensors are packed into. Allocated once,
// grown rarely (to the next power of two), and touched when allocated: a
// first touch of a page costs ~15 us on the machines we run on, so a fresh
// allocation per operation would cost more than the reduction.

#include <cstdint>
#include <memory>

namespace chorus::detail {

class FusionBuffer {
 public:
  /// A buffer of at least `bytes` bytes, 64-byte aligned; valid until the
  /// next call. Contents are not preserved across growth.
  void* reserve(int64_t bytes);
  int64_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  int64_t capacity_ = 0;
};

}  // namespace chorus::detail
