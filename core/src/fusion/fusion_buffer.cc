#include "fusion/fusion_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace chorus::detail {

void FusionBuffer::Free::operator()(void* p) const { std::free(p); }

void* FusionBuffer::reserve(int64_t bytes) {
  if (bytes <= capacity_) return data_.get();
  int64_t grown = 1 << 20;  // at least 1 MiB
  while (grown < bytes) grown *= 2;
  data_.reset();  // release first: never hold both
  void* p = std::aligned_alloc(64, static_cast<size_t>(grown));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, static_cast<size_t>(grown));  // touch every page now, not on the hot path
  data_.reset(p);
  capacity_ = grown;
  return p;
}

}  // namespace chorus::detail
