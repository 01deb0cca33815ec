// The C ABI's allocation entry points: memory from this rank's shared-memory
// arena (chorus::allocate_shared_host), so a framework plugged in through C
// gets the zero-copy allreduce the LibTorch adapter has. The C++ API hands
// out shared_ptrs; here each live block is kept by its address until
// chorus_free_shared_host.
#include <mutex>
#include <string>
#include <unordered_map>

#include "c_api/c_guard.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace {

class SharedHostBlocks {
 public:
  void* add(std::shared_ptr<void> block) {
    void* p = block.get();
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[p] = std::move(block);
    return p;
  }
  bool remove(void* p) {
    std::shared_ptr<void> released;  // freed outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return false;
    released = std::move(it->second);
    blocks_.erase(it);
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, std::shared_ptr<void>> blocks_;
};

// Leaked on purpose: blocks may be freed from static destructors.
SharedHostBlocks& blocks() {
  static SharedHostBlocks* instance = new SharedHostBlocks();
  return *instance;
}

}  // namespace

extern "C" {

int chorus_allocate_shared_host(int64_t bytes, void** out) {
  using chorus::detail::fail;
  return chorus::detail::guarded([&]() -> int {
    if (out == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_allocate_shared_host: `out` is NULL");
    *out = nullptr;
    if (bytes < 0) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT,
                  "chorus_allocate_shared_host: `bytes` is " + std::to_string(bytes) + ", must be >= 0");
    }
    *out = blocks().add(chorus::allocate_shared_host(bytes));
    return CHORUS_OK;
  });
}

int chorus_free_shared_host(void* block) {
  using chorus::detail::fail;
  return chorus::detail::guarded([&]() -> int {
    if (block == nullptr) return CHORUS_OK;  // like free(NULL)
    if (!blocks().remove(block)) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT,
                  "chorus_free_shared_host: the pointer was not returned by chorus_allocate_shared_host "
                  "(or was freed already)");
    }
    return CHORUS_OK;
  });
}

int chorus_in_shared_host(const void* p, int64_t bytes) {
  return chorus::detail::guarded([&]() -> int { return chorus::current_runtime()->in_shared_host(p, bytes) ? 1 : 0; });
}

}  // extern "C"
