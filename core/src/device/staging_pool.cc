#include "device/staging_pool.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace chorus::detail {

int64_t StagingPool::rounded(int64_t bytes) {
  int64_t size = 4096;
  while (size < bytes && size < (int64_t{1} << 62)) size *= 2;
  return std::max(size, bytes);
}

StatusOr<std::shared_ptr<char>> StagingPool::lease(int64_t bytes) {
  Buffer taken{0, nullptr};
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& free = state_->free;
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->bytes >= bytes && (best == free.end() || it->bytes < best->bytes)) best = it;
    }
    if (best != free.end()) {
      taken = std::move(*best);
      free.erase(best);
    }
  }
  if (!taken.memory) {
    const int64_t size = rounded(bytes);
    StatusOr<std::shared_ptr<void>> fresh = memory_.allocate_pinned(size);
    if (!fresh.is_ok()) {
      return Status(fresh.status().code(), "allocating " + std::to_string(size) +
                                               " bytes of pinned host staging memory failed: " +
                                               fresh.status().message());
    }
    taken = {size, std::move(fresh).value()};
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->allocations;
  }
  char* data = static_cast<char*>(taken.memory.get());
  // The lease hands the buffer back; a pool already gone frees it instead.
  std::weak_ptr<State> pool = state_;
  return std::shared_ptr<char>(data, [pool, taken](char*) mutable {
    if (auto state = pool.lock()) {
      std::lock_guard<std::mutex> lock(state->mu);
      state->free.push_back(std::move(taken));
    }
  });
}

namespace {

// Buffers a hung copy may still write: kept for the life of the process,
// never freed (freeing pinned memory synchronizes the device). Held by a
// never-destroyed list so they stay reachable, not lost.
void keep_forever(std::vector<std::shared_ptr<void>> buffers) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  std::lock_guard<std::mutex> lock(mu);
  for (auto& b : buffers) kept->push_back(std::move(b));
}

}  // namespace

StagingPool::State::~State() {
  if (!leak) return;
  std::vector<std::shared_ptr<void>> buffers;
  for (Buffer& b : free) buffers.push_back(std::move(b.memory));
  keep_forever(std::move(buffers));
}

void StagingPool::leak_buffers() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->leak = true;
}

int64_t StagingPool::allocations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->allocations;
}

}  // namespace chorus::detail
