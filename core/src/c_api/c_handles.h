#pragma once
// What the C ABI's entry points share across files: the handle table, the
// process set of an id, and the checks of a shaped input with an allocation
// callback (c_api.cc and c_grouped.cc: host memory, c_device.cc: device
// memory).

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace chorus::detail {

// Handles are integers mapped to chorus::Handle; chorus_wait releases them.
class HandleTable {
 public:
  int64_t add(chorus::Handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_++;
    handles_.emplace(id, std::move(h));
    return id;
  }
  bool find(int64_t id, chorus::Handle* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(id);
    if (it == handles_.end()) return false;
    *out = it->second;
    return true;
  }
  void erase(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    handles_.erase(id);
  }

 private:
  std::mutex mu_;
  int64_t next_ = 1;
  std::unordered_map<int64_t, chorus::Handle> handles_;
};

HandleTable& handles();

// Hooks that run an operation in the registered set with this id (0: global);
// throws InvalidArgumentError for an unknown id.
chorus::OpHooks in_set(int process_set_id);

// The checks every C collective with a shaped input and an allocation
// callback shares; fills `tensor` and `hooks->context`. Returns 0, or the
// failure code with the message set.
int check_shaped_call(const char* function, const char* name, const void* input, const int64_t* shape, int ndim,
                      chorus_dtype dtype, chorus_alloc_fn alloc, int64_t* handle,
                      std::shared_ptr<chorus::HostTensorView>* tensor, chorus::OpHooks* hooks, void* user_data);

}  // namespace chorus::detail
