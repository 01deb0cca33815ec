#pragma once
// RuntimeStats written by the background thread, read by any thread, and
// the counters only the library's tests read (InternalStats).

#include <mutex>

#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"
#include "negotiation/messages.h"

namespace chorus::detail {

/// RuntimeStats plus which route each data-plane allreduce took: the tests
/// check those against choose_allreduce_route; users see the route's effect
/// (shm_zero_copy_ops) and the tuning knobs, not the route itself.
/// Autotuned settings this rank applied, before running the global set's
/// response list number `round` (counted from 0).
struct TuningApplied {
  int64_t round = 0;
  TunedSettings settings;
  bool operator==(const TuningApplied& o) const { return round == o.round && settings == o.settings; }
};

struct InternalStats : RuntimeStats {
  int64_t ring_allreduce_ops = 0;  ///< allreduce calls the pipelined ring ran
  int64_t adasum_allreduce_ops = 0;  ///< allreduce calls the Adasum tree ran
  int64_t hierarchical_allreduce_ops = 0;  ///< allreduce calls the hierarchical allreduce ran
  int64_t shm_allreduce_ops = 0;   ///< allreduce calls run through shared memory
  int64_t shm_single_copy_ops = 0; ///< of those, read and written across processes
  int64_t staged_device_ops = 0;   ///< CUDA responses run through pinned host memory (staged path)
  int64_t staging_allocations = 0; ///< pinned staging buffers the staged path allocated (reuse keeps it low)
  std::vector<TuningApplied> tuning_applied;  ///< CHORUS_AUTOTUNE: every change, in order
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

/// One allgather response of `tensors` tensors, `succeeded` of them OK: the
/// CPU executor's and the device's count.
inline void count_allgather(RuntimeStats& st, size_t tensors, int64_t succeeded) {
  st.allgathers += succeeded;
  ++st.allgather_ops;
  st.fused_allgather_ops += tensors > 1;
}

/// A response that ran wholly on the device (NCCL), once it finished: the
/// counters the CPU executor keeps for its own responses, so the stats and
/// autotune's samples (bytes_allreduced) see GPU work too.
inline void record_device_response(SharedStats& stats, ResponseType type, size_t tensors, int64_t bytes,
                                   const Status& status) {
  const auto n = static_cast<int64_t>(tensors);
  stats.update([&](RuntimeStats& st) {
    if (!status.is_ok()) {
      st.errors += n;
    } else if (type == ResponseType::kAllreduce) {
      ++st.allreduce_ops;
      st.fused_allreduce_ops += tensors > 1;
      st.tensors_allreduced += n;
      st.bytes_allreduced += bytes;
    } else if (type == ResponseType::kAllgather) {
      count_allgather(st, tensors, n);
    } else if (type == ResponseType::kBroadcast) {
      st.broadcasts += n;
    }
  });
}

}  // namespace chorus::detail
