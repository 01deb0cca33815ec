#pragma once
// RuntimeStats written by the background thread, read by any thread.

#include <mutex>

#include "chorus/options.h"

namespace chorus::detail {

class SharedStats {
 public:
  template <class F>
  void update(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(stats_);
  }
  RuntimeStats get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  mutable std::mutex mu_;
  RuntimeStats stats_;
};

}  // namespace chorus::detail
