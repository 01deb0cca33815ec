#pragma once
// The coordinator's count of cache bits (rank 0): per response-cache slot,
// which ranks have its tensor ready. When the last rank's bit arrives the
// slot is ready everywhere, with nothing to validate (every rank cached the
// same signature), no request built and no name looked up: the steady state
// of a training loop costs a few array updates per tensor.
//
// Slots whose state must leave this fast path (the slot is about to be
// refilled, a rank joined, a rank sent the same tensor in full) are dropped
// from here with the ranks that had marked them, and rank 0's side of the
// loop (engine/coordinator_side.h) hands those to the Coordinator as full
// requests. Pure logic: unit-tested directly.

#include <chrono>
#include <cstdint>
#include <vector>

namespace chorus::detail {

class CachedReadiness {
 public:
  using Clock = std::chrono::steady_clock;
  CachedReadiness(int world_size, size_t capacity);

  enum class Mark {
    kWaiting,   ///< other ranks have not set this slot yet
    kReady,     ///< every rank set it: the slot's state is cleared
    kDuplicate  ///< this rank had set it already (nothing changed)
  };
  Mark mark(int32_t slot, int rank, Clock::time_point now = Clock::now());

  /// Some ranks, not all, set `slot`.
  bool partial(int32_t slot) const;
  /// True when no slot is partly set.
  bool idle() const { return partial_slots_ == 0; }

  /// A partly set slot leaving the fast path.
  struct Dropped {
    std::vector<int> ranks;  ///< the ranks that had set it, ascending
    Clock::time_point first_seen;
  };
  /// Forgets `slot`'s marks (nothing when it is not partial).
  Dropped drop(int32_t slot);
  /// Every partly set slot, ascending.
  std::vector<int32_t> partial_slots() const;

  struct Stalled {
    int32_t slot = -1;
    std::vector<int> marked_ranks;
    double waiting_seconds = 0;
    Clock::time_point first_seen;  ///< when the first rank set it
  };
  /// Partly set slots waiting longer than `threshold_seconds`.
  std::vector<Stalled> stalled(Clock::time_point now, double threshold_seconds) const;

 private:
  struct SlotState {
    int32_t count = 0;  // ranks that set the slot
    Clock::time_point first_seen;
  };
  bool marked(size_t slot, int rank) const;
  void reset(size_t slot);
  std::vector<int> ranks_of(size_t slot) const;

  int world_size_;
  size_t words_per_slot_;        // rank bits per slot
  std::vector<SlotState> state_;
  std::vector<uint64_t> ranks_;  // slot s, rank r: bit r % 64 of ranks_[s * words_per_slot_ + r / 64]
  int64_t partial_slots_ = 0;
};

}  // namespace chorus::detail
