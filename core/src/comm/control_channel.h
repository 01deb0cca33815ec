#pragma once
// The control plane between the ranks and the coordinator (rank 0):
// serialized RequestLists up, ResponseLists down. Messages between one pair
// of ranks arrive in the order they were sent. Every call is non-blocking so
// the background thread can sleep between polls instead of spinning inside MPI.

#include <chrono>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus::detail {

class ControlChannel {
 public:
  virtual ~ControlChannel() = default;
  /// Worker -> coordinator.
  virtual Status send_to_coordinator(std::string bytes) = 0;
  /// Coordinator: next message from any worker, if one arrived.
  virtual bool poll_from_workers(int* from_rank, std::string* bytes) = 0;
  /// Coordinator -> every worker.
  virtual Status send_to_workers(const std::string& bytes) = 0;
  /// Worker: next message from the coordinator, if one arrived.
  virtual bool poll_from_coordinator(std::string* bytes) = 0;
  /// Finishes outstanding sends and waits for every rank to get here, so the
  /// channel is quiet; called by every rank once the shutdown response went
  /// around. Gives up after `bound` (a rank stopped, gone or stuck) and
  /// returns false then; true when every rank got here in time.
  virtual bool close(std::chrono::milliseconds bound) = 0;
  /// After close() returned false: the ranks known not to have got there,
  /// for the message; empty where the transport cannot tell (MPI's barrier
  /// does not say who is missing).
  virtual std::vector<int> not_at_close() const { return {}; }
  /// OK, or the error of a transport that noticed a peer is gone (it names
  /// the rank). The polls cannot say so; the background loop checks this
  /// every round and stops with it, failing what is pending.
  virtual Status failure() const { return Status::ok(); }
};

}  // namespace chorus::detail
