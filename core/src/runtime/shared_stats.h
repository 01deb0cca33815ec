#pragma once
// RuntimeStats written by the background thread, read by any thread, and
// the counters only the library's tests read (InternalStats).

#include <mutex>

#include "chorus/options.h"

namespace chorus::detail {

/// RuntimeStats plus which route each data-plane allreduce took: the tests
/// check those against choose_allreduce_route; users see the route's effect
/// (shm_zero_copy_ops) and the tuning knobs, not the route itself.
struct InternalStats : RuntimeStats {
  int64_t ring_allreduce_ops = 0;  ///< allreduce calls the pipelined ring ran
  int64_t adasum_allreduce_ops = 0;  ///< allreduce calls the Adasum tree ran
  int64_t shm_allreduce_ops = 0;   ///< allreduce calls run through shared memory
  int64_t shm_single_copy_ops = 0; ///< of those, read and written across processes
};

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
  InternalStats internal() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  mutable std::mutex mu_;
  InternalStats stats_;
};

}  // namespace chorus::detail
