#pragma once
// A Backend is everything a Runtime needs from the outside world: where this
// process sits in the job, the control channel and the data-plane
// communicator. The background thread calls start() before anything else and
// stop() last, so backends that need thread affinity (MPI) get it.

#include <memory>
#include <string>

#include "chorus/status.h"
#include "comm/communicator.h"
#include "comm/control_channel.h"

namespace chorus::detail {

struct Topology {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Runs on the background thread, before any other call.
  virtual Status start() = 0;
  /// Runs on the background thread, after the last other call.
  virtual void stop() = 0;
  virtual Topology topology() const = 0;
  virtual ControlChannel& control() = 0;
  virtual Communicator& data() = 0;
};

}  // namespace chorus::detail
