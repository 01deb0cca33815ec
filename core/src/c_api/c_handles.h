#pragma once
// The C ABI's handle table (integers mapped to chorus::Handle; chorus_wait
// releases them) and the process-set hooks its collectives share
// (c_api.cc: host memory, c_device.cc: device memory).

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "chorus/chorus.h"

namespace chorus::detail {

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

inline HandleTable& handles() {
  static HandleTable* table = new HandleTable();  // leaked: outlives static destructors
  return *table;
}

// Hooks that run an operation in the registered set with this id (0: global);
// throws InvalidArgumentError for an unknown id.
inline chorus::OpHooks in_set(int process_set_id) {
  chorus::OpHooks hooks;
  hooks.process_set = chorus::current_runtime()->process_set(process_set_id);
  return hooks;
}

}  // namespace chorus::detail
