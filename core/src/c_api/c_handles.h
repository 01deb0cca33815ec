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

// This rank's bad arguments to the collective `kind` of `name`, negotiated
// (Runtime::refuse_async): the other ranks' calls under `name` fail too
// instead of waiting for this one. Returns 0 with *handle set; the handle
// fails at the wait with the message naming this rank and `why`.
int refuse_call(chorus::Collective kind, const char* name, const chorus::Status& why, const chorus::OpHooks& hooks,
                int64_t* handle);

// The checks of a shaped input with an allocation callback that can differ
// between ranks (the callback, the shape, the dtype, the input): OK with
// `tensor` and `hooks->context` filled, or what is wrong, after `what`.
chorus::Status shaped_tensor(const std::string& what, const void* input, const int64_t* shape, int ndim,
                             chorus_dtype dtype, chorus_alloc_fn alloc, void* user_data,
                             std::shared_ptr<chorus::HostTensorView>* tensor, chorus::OpHooks* hooks);

// The checks every C collective with a shaped input and an allocation
// callback shares. A NULL name or handle returns the failure code with the
// message set; bad input is refused through negotiation (refuse_call): 0,
// with `tensor` left empty and *handle set. Else 0 with `tensor` and
// `hooks->context` filled.
int check_shaped_call(chorus::Collective kind, const char* function, const char* name, const void* input,
                      const int64_t* shape, int ndim, chorus_dtype dtype, chorus_alloc_fn alloc, int64_t* handle,
                      std::shared_ptr<chorus::HostTensorView>* tensor, chorus::OpHooks* hooks, void* user_data);

}  // namespace chorus::detail
