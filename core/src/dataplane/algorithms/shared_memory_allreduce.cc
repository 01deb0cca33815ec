#include "dataplane/algorithms/shared_memory_allreduce.h"

#include <sched.h>

#include <chrono>
#include <thread>
#include <utility>

#include "dataplane/algorithms/exchange_area.h"
#include "dataplane/algorithms/ring_allreduce.h"
#include "dataplane/algorithms/zero_copy_allreduce.h"
#include "kernels/reduce_kernels.h"
#include "kernels/streaming_copy.h"

namespace chorus::detail {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void allreduce_pieces_alone(const std::vector<ReducePiece>& pieces, DataType dtype, double prescale,
                            PostScale scale) {
  for (const ReducePiece& p : pieces) {
    scale_copy(p.output, p.input, p.count, dtype, prescale, 1);
    scale_copy(p.output, p.output, p.count, dtype, scale.factor, scale.divisor);
  }
}

SharedMemoryAllreduce::SharedMemoryAllreduce(SharedSlots slots, CrossMemoryCalls calls)
    : slots_(std::move(slots)), calls_(calls), probe_word_(probe_word_of(slots_.rank)) {}

char* SharedMemoryAllreduce::exchange_area(int rank) const {
  return slots_.exchange[static_cast<size_t>(rank)] + static_cast<int64_t>(calls_made_ % 2) * kExchangeAreaBytes;
}

// Every answer below comes from what every rank published (and the agreed
// `single_copy`), so all ranks get the same ones. The totals must agree
// (they always do when the contract holds; a cursor would run off a
// shorter rank's pieces otherwise).
int SharedMemoryAllreduce::ranks_in_arena() const {
  int in_arena = 0;
  for (int k = 0; k < slots_.size; ++k) in_arena += published_in_arena(exchange_area(k)) ? 1 : 0;
  return in_arena;
}

bool SharedMemoryAllreduce::all_described_alike() const {
  for (int k = 0; k < slots_.size; ++k) {
    if (!published_described(exchange_area(k))) return false;
    if (published_total(exchange_area(k)) != published_total(exchange_area(0))) return false;
  }
  return true;
}

SharedPath SharedMemoryAllreduce::agreed_path(bool single_copy, int64_t count) {
  if (count == 0 || !all_described_alike()) return SharedPath::kStaged;
  if (ranks_in_arena() == slots_.size) return SharedPath::kZeroCopy;
  if (single_copy && single_copy_available()) return SharedPath::kSingleCopy;
  return SharedPath::kStaged;
}

// Once, on the first single-copy call: every rank reads and writes back
// every other rank's probe word, says how that went, and after one more
// barrier all know whether every rank reached every other.
bool SharedMemoryAllreduce::single_copy_available() {
  if (cross_memory_ != CrossMemory::kUnknown) return cross_memory_ == CrossMemory::kAvailable;
  CrossMemoryFailure mine;
  for (int k = 0; k < slots_.size && mine.ok(); ++k) {
    if (k == slots_.rank) continue;
    mine = probe_cross_memory(calls_, k, published_pid(exchange_area(k)), published_probe(exchange_area(k)));
  }
  publish_failure(exchange_area(slots_.rank), FailureSlot::kProbe, mine);
  barrier();
  cross_memory_ = CrossMemory::kAvailable;
  for (int k = 0; k < slots_.size && cross_memory_ == CrossMemory::kAvailable; ++k) {
    const CrossMemoryFailure failure = published_failure(exchange_area(k), FailureSlot::kProbe);
    if (failure.ok()) continue;
    cross_memory_ = CrossMemory::kRefused;
    refusal_ = failure.describe(k);
  }
  return cross_memory_ == CrossMemory::kAvailable;
}

void SharedMemoryAllreduce::reduce_in_place_of_all(int64_t count, DataType dtype, ReduceOp op, double prescale,
                                                   PostScale scale) {
  published_.resize(static_cast<size_t>(slots_.size));
  for (int k = 0; k < slots_.size; ++k) {
    published_pieces(exchange_area(k), slots_.arenas[static_cast<size_t>(k)], &published_[static_cast<size_t>(k)]);
  }
  const ChunkRange own = even_chunk(count, slots_.size, slots_.rank);
  const bool streaming = count * dtype_size(dtype) >= kZeroCopyStreamingBytes;
  reduce_part_into_all(published_, own.offset, own.length, dtype, op, prescale, scale, streaming, &scratch_);
  barrier();  // no rank returns before its outputs are written and its inputs read
}

// This rank's part, read from and written to every rank's memory, then one
// barrier; a rank that failed to reach another says so before it, so every
// rank returns the same error.
Status SharedMemoryAllreduce::run_single_copy(int64_t count, DataType dtype, ReduceOp op, double prescale,
                                              PostScale scale) {
  const int n = slots_.size;
  ranks_.me = slots_.rank;
  ranks_.pieces.resize(static_cast<size_t>(n));
  ranks_.pids.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    published_remote_pieces(exchange_area(k), &ranks_.pieces[static_cast<size_t>(k)]);
    ranks_.pids[static_cast<size_t>(k)] = published_pid(exchange_area(k));
  }
  const ChunkRange own = even_chunk(count, n, slots_.rank);
  const bool streaming = count * dtype_size(dtype) >= kZeroCopyStreamingBytes;
  const CrossMemoryFailure mine =
      single_copy_reduce_part(ranks_, calls_, own.offset, own.length, dtype, op, prescale, scale, streaming, &scratch_);
  publish_failure(exchange_area(slots_.rank), FailureSlot::kCall, mine);
  barrier();
  std::string failures;
  for (int k = 0; k < n; ++k) {
    const CrossMemoryFailure failure = published_failure(exchange_area(k), FailureSlot::kCall);
    if (!failure.ok()) failures += (failures.empty() ? "" : "; ") + failure.describe(k);
  }
  if (failures.empty()) return Status::ok();
  return Status::unknown_error("shared-memory allreduce of " + std::to_string(count) + " " + dtype_name(dtype) +
                               " elements: " + failures + "; the outputs of this call are incomplete");
}

void SharedMemoryAllreduce::barrier() {
  ++barriers_;
  slots_.arrivals[static_cast<size_t>(slots_.rank)]->store(barriers_, std::memory_order_release);
  for (int k = 0; k < slots_.size; ++k) {
    const std::atomic<uint64_t>* a = slots_.arrivals[static_cast<size_t>(k)];
    // The others are a few copies away: spin briefly, then give the core
    // away (ranks and compute threads may outnumber the cores); a peer that
    // stays away long (stopped, or starved of the core) is waited for in
    // 1 ms sleeps rather than by burning a core.
    int64_t spins = 0;
    Clock::time_point since{};
    bool slow = false;
    while (a->load(std::memory_order_acquire) < barriers_) {
      if (slow) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (slots_.while_waiting) slots_.while_waiting();  // a dead peer ends us here
        continue;
      }
      if (++spins <= 64) continue;
      sched_yield();
      if (spins % 1024 != 0) continue;
      const auto now = Clock::now();
      if (since == Clock::time_point{}) since = now;
      slow = now - since > std::chrono::milliseconds(100);
    }
  }
}

// Pipelined, one barrier per block: phase p copies out block p-2, reduces
// block p-1 and copies in block p (blocks p and p-2 share a staging
// block). In a phase a rank writes the other ranks' parts of its staging
// for p and its own part of its staging for p-1, while the others read its
// own part of the staging for p-2 (= p's) and their parts of p-1's:
// disjoint, since parts sit at fixed places. The last phase (copy out
// only) needs no barrier after it: it runs alongside the next call's
// first phase, which copies into the other staging block (the block
// sequence runs on across calls), and that call's first barrier waits
// for it. Phase 0 (copy in block 0, barrier) is the caller's.
void SharedMemoryAllreduce::run_staged_phases(StagedCall& call, int64_t first_phase) {
  const int64_t blocks = call.blocks();
  for (int64_t p = first_phase; p < blocks + 2; ++p) {
    if (p >= 2) call.copy_out(p - 2);
    if (p >= 1 && p - 1 < blocks) call.reduce(p - 1);
    if (p < blocks) call.copy_in(p);
    if (p < blocks + 1) barrier();
  }
  block_sequence_ += blocks;
}

// Phase 0 also publishes where this rank's tensors lie (when the slots have
// exchange areas). A rank that may skip staging (its tensors in its arena,
// or a single-copy call) copies nothing in before the barrier; after it
// every rank reads the same publications and takes the same path. Back on
// the staged path, the ranks that skipped block 0's copy make it up before
// one more barrier.
// A wait given up for a dead rank (SharedSlots::while_waiting) fails the
// call; the transport is broken, so no later call follows on this group.
Status SharedMemoryAllreduce::allreduce(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op,
                                        double prescale, PostScale scale, bool single_copy) {
  try {
    return allreduce_waiting(pieces, dtype, op, prescale, scale, single_copy);
  } catch (const SharedWaitAbandoned& e) {
    return Status::aborted(std::string("shared-memory allreduce: ") + e.what());
  }
}

Status SharedMemoryAllreduce::allreduce_waiting(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op,
                                                double prescale, PostScale scale, bool single_copy) {
  last_path_ = SharedPath::kStaged;
  const int me = slots_.rank;
  if (slots_.size <= 1) {
    allreduce_pieces_alone(pieces, dtype, prescale, scale);
    return Status::ok();
  }
  StagedCall staged(slots_, pieces, dtype, op, prescale, scale, block_sequence_, &scratch_, &prescaled_);
  Status s = staged.check();
  if (!s.is_ok()) return s;
  const int64_t count = staged.count();
  const bool publish = !slots_.exchange.empty() && count > 0;
  if (publish && single_copy && cross_memory_ == CrossMemory::kUnknown) allow_cross_memory_from_peers();
  const char* arena = slots_.arenas.empty() ? nullptr : slots_.arenas[static_cast<size_t>(me)];
  const Publication mine = publish ? publish_pieces(exchange_area(me), pieces, arena, slots_.arena_bytes,
                                                    dtype_size(dtype), &probe_word_)
                                   : Publication{};
  const bool copied_early = !(publish && (single_copy || mine.in_arena));
  if (copied_early && staged.blocks() > 0) staged.copy_in(0);
  barrier();
  if (publish) {
    last_path_ = agreed_path(single_copy, count);
    if (last_path_ == SharedPath::kZeroCopy) {
      reduce_in_place_of_all(count, dtype, op, prescale, scale);
      ++zero_copy_calls_;
    } else if (last_path_ == SharedPath::kSingleCopy) {
      s = run_single_copy(count, dtype, op, prescale, scale);
    }
    if (last_path_ != SharedPath::kStaged) {
      ++calls_made_;
      return s;
    }
    if (!copied_early) staged.copy_in(0);
    if (single_copy || ranks_in_arena() > 0) barrier();  // some rank did not copy block 0 in early
  }
  run_staged_phases(staged, 1);
  if (staged.streaming()) streaming_stores_done();  // before the caller hands the outputs to another thread
  ++calls_made_;
  return Status::ok();
}

}  // namespace chorus::detail
