#pragma once
// Timeline rows for device (CUDA) responses: each tensor's row gets the
// activities of its device work after its NEGOTIATE bar, with Horovod's
// activity names (NCCL_ALLREDUCE, MEMCPY_IN_HOST_BUFFER, ...). The NCCL
// path records one span from its launch on the background thread until its
// completion thread sees the work finished; the staged path records its
// queue, copy in, host collective and copy back from its worker thread. The
// Timeline takes its own lock, so any thread may record.

#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "negotiation/messages.h"
#include "engine/tensor_entry.h"
#include "timeline/timeline.h"

namespace chorus::detail {

/// `prefix` and Horovod's name of the collective: "NCCL_" and a broadcast
/// give "NCCL_BCAST"; the others ALLREDUCE, ALLGATHER, ALLTOALL,
/// REDUCESCATTER (and BARRIER, JOIN, ERROR, ADD_PROCESS_SET).
std::string device_activity(const char* prefix, ResponseType type);

/// The rows of one device response's tensors. Takes their names only when
/// the timeline is on, so a timeline that is off costs a branch.
class TensorSpans {
 public:
  using Clock = Timeline::Clock;
  TensorSpans(Timeline& timeline, const std::vector<TensorEntry>& entries);
  /// `label` over [start, end) on every tensor's row (nothing when off).
  void record(const std::string& label, Clock::time_point start, Clock::time_point end) const;
  bool on() const { return !names_.empty(); }

 private:
  Timeline* timeline_;
  std::vector<std::string> names_;
};

/// For a response launched at `launched`: what records `label` on each of
/// `entries`' rows from then until it is called (on whichever thread sees
/// the device work end; the status does not change the span). Empty when
/// the timeline is off.
std::function<void(const Status&)> device_span(Timeline& timeline, std::string label,
                                               const std::vector<TensorEntry>& entries,
                                               Timeline::Clock::time_point launched);

}  // namespace chorus::detail
