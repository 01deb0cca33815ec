#pragma once
// The hand-off between framework threads and the background thread.
// Framework threads add entries (never blocking on communication); the
// background thread takes the new requests each round and, once the
// coordinator answered, the entries by name.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tensor_entry.h"

namespace chorus::detail {

class TensorQueue {
 public:
  /// Adds the entries atomically (all or none). InvalidArgument when a name
  /// is already in flight on this rank or repeats within `entries`; the
  /// close reason once the queue is closed.
  Status add(std::vector<TensorEntry> entries);
  /// The same for one entry (no batch bookkeeping).
  Status add(TensorEntry entry);
  /// Requests added since the last call, in order.
  std::vector<Request> take_new_requests();
  /// The request of the entry named `name`, if one is held.
  bool request_of(const std::string& name, Request* out) const;
  /// Removes and returns the entry named `name`; false if there is none.
  bool take(const std::string& name, TensorEntry* out);
  /// Refuses further adds with `reason` and returns every entry still held.
  std::vector<TensorEntry> close(const Status& reason);
  /// True once close() was called.
  bool closed() const;
  /// Entries held (requested or waiting for the coordinator).
  size_t in_flight() const;
  /// The names of the entries held, sorted; at most `max` of them.
  std::vector<std::string> names_in_flight(size_t max) const;

  /// Sleeps until a new request arrives, notify() is called, or `timeout`.
  void wait_for_work(std::chrono::nanoseconds timeout);
  /// Wakes wait_for_work (e.g. a shutdown request).
  void notify();
  /// Whether add() wakes a sleeping wait_for_work at once.
  void set_wake_on_add(bool wake) { wake_on_add_ = wake; }

 private:
  Status refused(const TensorEntry* first) const;  // mu_ held
  static Status in_flight_error(const std::string& name);
  void added();  // mu_ held: publishes what add() put in

  // Mirrors read without the lock: the background thread polls them in a
  // loop while a framework thread may be adding a burst of tensors, and
  // taking the lock on every poll would make the two fight over it.
  std::atomic<bool> has_new_requests_{false};
  std::atomic<size_t> held_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, TensorEntry> entries_;
  std::deque<Request> new_requests_;
  bool closed_ = false;
  Status close_reason_;
  bool notified_ = false;
  bool wake_on_add_ = true;
};

}  // namespace chorus::detail
