#pragma once
// The NCCL communicators of one process set on this rank: the set's own,
// and, with CHORUS_HIERARCHICAL_ALLREDUCE on hosts that hold equal numbers
// of the set's ranks, two split from it: the ranks of this host, and the
// ranks at this rank's place on every host. All of them are used from the
// set's background thread only, and every launch goes to the device's one
// stream in response order, so the launch-order rule (device/cuda/launch_order.h)
// holds for the three as for one.

#include <memory>
#include <string>

#include "comm/backend.h"
#include "device/cuda/completion_poller.h"
#include "device/cuda/nccl_comm.h"
#include "device/cuda/nccl_launcher.h"
#include "device/cuda/nccl_plan.h"

namespace chorus::detail::gpu {

class SetCommunicators {
 public:
  struct Spec {
    Backend* backend = nullptr;  ///< the set's: its collectives carry the unique id and the host grid
    int device = -1;
    std::string name;  ///< "chorus.<set id>"
    double timeout_seconds = 0;
    bool hierarchical = false;  ///< CHORUS_HIERARCHICAL_ALLREDUCE (agreed on every rank)
  };
  /// Collective over the set's ranks, at the same place of the response
  /// order on each. `*warning` says, on rank 0, why hierarchical is off
  /// when it was asked for and the hosts do not allow it.
  static Status create(const Spec& spec, std::unique_ptr<SetCommunicators>* out, std::string* warning);

  NcclComm& set() { return *set_; }
  /// This rank's place for the hierarchical allreduce, or null when it is off.
  const HostPlace* hierarchy() const { return host_ ? &place_ : nullptr; }
  PlanComms plan_comms() const;
  /// Polls every communicator's asynchronous error.
  AsyncErrorSource* error_source() { return &errors_; }
  void abort();
  void finalize_and_destroy(double timeout_seconds);

 private:
  class Errors final : public AsyncErrorSource {
   public:
    explicit Errors(const SetCommunicators* comms) : comms_(comms) {}
    Status poll() override;

   private:
    const SetCommunicators* comms_;
  };
  SetCommunicators() : errors_(this) {}

  std::unique_ptr<NcclComm> set_, host_, across_;
  HostPlace place_;
  Errors errors_;
};

}  // namespace chorus::detail::gpu
