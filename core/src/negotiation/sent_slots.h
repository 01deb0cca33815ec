#pragma once
// A worker's record of the cache bits it sent and that have not completed:
// which tensor each bit meant and at which cache epoch it was set, so that
// when the coordinator cannot take a bit (Resend: the slot changed before
// the bit arrived) the rank knows which request to send in full. A slot
// carries at most one such bit; while it does, the same slot is sent in
// full (rare: the slot was refilled while its old tensor was still out).
// A bit whose slot changes here before it completes stays findable by name
// ("displaced"). Pure logic: unit-tested directly.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace chorus::detail {

class SentSlots {
 public:
  explicit SentSlots(size_t capacity) : by_slot_(capacity) {}

  /// Records a bit for `name` in `slot` at `epoch`; false when `slot`
  /// already carries one (send this request in full instead).
  bool try_send(int32_t slot, uint64_t epoch, const std::string& name);
  /// `name` completed (or failed); `slot` is where it was cached when it
  /// completed, -1 if it was not.
  void completed(const std::string& name, int32_t slot);
  /// `slot`'s content is about to change.
  void slot_changing(int32_t slot);
  /// The tensor whose bit for `slot` was set at `epoch`, forgotten here (it
  /// is sent in full next); nothing when no such bit is out.
  std::optional<std::string> take_resend(int32_t slot, uint64_t epoch);
  /// No bit is out.
  bool empty() const { return live_ == 0 && displaced_.empty(); }

 private:
  struct Sent {
    bool live = false;
    uint64_t epoch = 0;
    std::string name;  // assigned in place: steady state reuses its buffer
  };
  struct Displaced {
    int32_t slot = -1;
    uint64_t epoch = 0;
  };
  std::vector<Sent> by_slot_;
  int64_t live_ = 0;
  std::unordered_map<std::string, Displaced> displaced_;  // by name
};

}  // namespace chorus::detail
