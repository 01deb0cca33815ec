#include "dataplane/algorithms/shared_memory_allreduce.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "kernels/reduce_kernels.h"
#include "dataplane/algorithms/ring_allreduce.h"
#include "kernels/streaming_copy.h"
#include "dataplane/algorithms/zero_copy_allreduce.h"

namespace chorus::detail {

namespace {

using Clock = std::chrono::steady_clock;

// Element ranges of the concatenated pieces, as spans of single pieces.
class PieceSpans {
 public:
  PieceSpans(const std::vector<ReducePiece>& pieces, int64_t esize) : pieces_(pieces), esize_(esize) {
    starts_.reserve(pieces.size());
    int64_t at = 0;
    for (const auto& p : pieces) {
      starts_.push_back(at);
      at += p.count;
    }
    total_ = at;
  }
  int64_t total() const { return total_; }

  // Calls f(input, output, done, take) for consecutive spans of elements
  // [begin, begin + len): `input`/`output` point at the span in its piece,
  // `done` elements of the range come before it.
  template <class F>
  void for_each(int64_t begin, int64_t len, F&& f) const {
    if (len <= 0) return;
    // The last piece starting at or before `begin` that is not empty.
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
    int64_t done = 0;
    while (done < len) {
      const ReducePiece& p = pieces_[i];
      const int64_t off = begin + done - starts_[i];
      const int64_t take = std::min(len - done, p.count - off);
      if (take > 0) {
        f(static_cast<const char*>(p.input) + off * esize_, static_cast<char*>(p.output) + off * esize_, done, take);
        done += take;
      }
      ++i;
    }
  }

 private:
  const std::vector<ReducePiece>& pieces_;
  const int64_t esize_;
  std::vector<int64_t> starts_;
  int64_t total_ = 0;
};

}  // namespace

void allreduce_pieces_alone(const std::vector<ReducePiece>& pieces, DataType dtype, double prescale,
                            PostScale scale) {
  for (const ReducePiece& p : pieces) {
    scale_copy(p.output, p.input, p.count, dtype, prescale, 1);
    scale_copy(p.output, p.output, p.count, dtype, scale.factor, scale.divisor);
  }
}

SharedMemoryAllreduce::SharedMemoryAllreduce(SharedSlots slots) : slots_(std::move(slots)) {}

char* SharedMemoryAllreduce::exchange_area(int rank) const {
  return slots_.exchange[static_cast<size_t>(rank)] + static_cast<int64_t>(calls_ % 2) * kExchangeAreaBytes;
}

// Both answers come from what every rank published, so all ranks get the
// same ones. Zero-copy also needs the ranks' totals to agree (they always
// do when the contract holds; a cursor would run off a shorter rank's
// pieces otherwise).
int SharedMemoryAllreduce::ranks_in_arena() const {
  int in_arena = 0;
  for (int k = 0; k < slots_.size; ++k) in_arena += published_in_arena(exchange_area(k)) ? 1 : 0;
  return in_arena;
}

bool SharedMemoryAllreduce::totals_agree() const {
  for (int k = 1; k < slots_.size; ++k) {
    if (published_total(exchange_area(k)) != published_total(exchange_area(0))) return false;
  }
  return true;
}

void SharedMemoryAllreduce::reduce_in_place_of_all(int64_t count, DataType dtype, ReduceOp op, double prescale,
                                                   PostScale scale) {
  published_.resize(static_cast<size_t>(slots_.size));
  for (int k = 0; k < slots_.size; ++k) {
    published_pieces(exchange_area(k), slots_.arenas[static_cast<size_t>(k)], &published_[static_cast<size_t>(k)]);
  }
  const ChunkRange own = ring_chunk(count, slots_.size, slots_.rank);
  const bool streaming = count * dtype_size(dtype) >= kZeroCopyStreamingBytes;
  reduce_part_into_all(published_, own.offset, own.length, dtype, op, prescale, scale, streaming, &scratch_);
}

char* SharedMemoryAllreduce::block(int rank, int64_t index) const {
  return slots_.staging[static_cast<size_t>(rank)] + (index % 2) * slots_.block_bytes;
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

Status SharedMemoryAllreduce::allreduce(const std::vector<ReducePiece>& pieces, DataType dtype, ReduceOp op,
                                        double prescale, PostScale scale) {
  const int n = slots_.size, me = slots_.rank;
  if (n <= 1) {
    allreduce_pieces_alone(pieces, dtype, prescale, scale);
    return Status::ok();
  }
  const int64_t esize = dtype_size(dtype);
  const PieceSpans spans(pieces, esize);
  // Part k of every block is staged at k * stride, whatever the block's
  // length: a rank's own part never moves, which the pipeline relies on.
  // Parts start on their own cache lines where the block allows it.
  const int64_t per_line = std::max<int64_t>(1, 64 / esize);
  int64_t stride = slots_.block_bytes / esize / n;
  if (stride >= per_line) stride -= stride % per_line;
  if (stride <= 0) {
    return Status::invalid_argument("shared-memory staging blocks of " + std::to_string(slots_.block_bytes) +
                                    " bytes cannot hold one " + dtype_name(dtype) + " element per rank (" +
                                    std::to_string(n) + " ranks)");
  }
  const int64_t block_elems = stride * n;
  const int64_t count = spans.total();
  const int64_t blocks = (count + block_elems - 1) / block_elems;
  auto first_of = [&](int64_t b) { return b * block_elems; };
  auto length_of = [&](int64_t b) { return std::min(block_elems, count - b * block_elems); };
  // Results land in the outputs with streaming stores on large calls (as on
  // the zero-copy path): nobody reads them back soon, and skipping the read
  // for ownership of the output lines is a third less memory traffic. The
  // staging keeps ordinary stores: the other ranks read it next phase.
  const bool streaming = count * esize >= kZeroCopyStreamingBytes;
  const int64_t step = std::max<int64_t>(1, kZeroCopyStepBytes / esize);
  if (streaming && !scale.is_identity() && scratch_.size() < static_cast<size_t>(step * esize)) {
    scratch_.resize(static_cast<size_t>(step * esize));
  }
  auto write_out = [&](char* out, const char* result, int64_t take) {
    if (!streaming) {
      scale_copy(out, result, take, dtype, scale.factor, scale.divisor);
      return;
    }
    if (scale.is_identity()) {
      copy_streaming(out, result, static_cast<size_t>(take * esize));
      return;
    }
    for (int64_t done = 0; done < take; done += step) {  // scaled in L1, then streamed out
      const int64_t n_step = std::min(step, take - done);
      scale_copy(scratch_.data(), result + done * esize, n_step, dtype, scale.factor, scale.divisor);
      copy_streaming(out + done * esize, scratch_.data(), static_cast<size_t>(n_step * esize));
    }
  };
  // This rank's contribution to every other rank's part of block b.
  auto copy_in = [&](int64_t b) {
    char* mine = block(me, block_sequence_ + b);
    for (int k = 0; k < n; ++k) {
      if (k == me) continue;
      const ChunkRange part = ring_chunk(length_of(b), n, k);
      spans.for_each(first_of(b) + part.offset, part.length, [&](const char* in, char*, int64_t done, int64_t take) {
        scale_copy(mine + (k * stride + done) * esize, in, take, dtype, prescale, 1);
      });
    }
  };
  // Own part of block b: reduced once, here, for everyone, in rank order
  // like the zero-copy path, so both give the same bits.
  auto reduce = [&](int64_t b) {
    char* mine = block(me, block_sequence_ + b);
    const ChunkRange own = ring_chunk(length_of(b), n, me);
    spans.for_each(first_of(b) + own.offset, own.length, [&](const char* in, char* out, int64_t done, int64_t take) {
      const int64_t at = (me * stride + done) * esize;
      const char* own_input = in;
      if (prescale != 1.0) {
        if (prescaled_.size() < static_cast<size_t>(take * esize)) prescaled_.resize(static_cast<size_t>(take * esize));
        scale_copy(prescaled_.data(), in, take, dtype, prescale, 1);
        own_input = prescaled_.data();
      }
      auto input_of = [&](int k) -> const char* {
        return k == me ? own_input : block(k, block_sequence_ + b) + at;
      };
      char* acc = mine + at;
      reduce_to(acc, input_of(0), input_of(1), take, dtype, op);
      for (int k = 2; k < n; ++k) reduce_to(acc, acc, input_of(k), take, dtype, op);
      write_out(out, acc, take);
    });
  };
  // The other parts of block b, from the ranks that reduced them.
  auto copy_out = [&](int64_t b) {
    for (int k = 0; k < n; ++k) {
      if (k == me) continue;
      const ChunkRange part = ring_chunk(length_of(b), n, k);
      const char* theirs = block(k, block_sequence_ + b);
      spans.for_each(first_of(b) + part.offset, part.length, [&](const char*, char* out, int64_t done, int64_t take) {
        write_out(out, theirs + (k * stride + done) * esize, take);
      });
    }
  };
  // Pipelined, one barrier per block: phase p copies out block p-2, reduces
  // block p-1 and copies in block p (blocks p and p-2 share a staging
  // block). In a phase a rank writes the other ranks' parts of its staging
  // for p and its own part of its staging for p-1, while the others read its
  // own part of the staging for p-2 (= p's) and their parts of p-1's:
  // disjoint, since parts sit at fixed places. The last phase (copy out
  // only) needs no barrier after it: it runs alongside the next call's
  // first phase, which copies into the other staging block (the block
  // sequence runs on across calls), and that call's first barrier waits
  // for it.
  //
  // With arenas, the first phase also says whether this rank's tensors lie
  // in its arena (and then copies nothing in). After its barrier every rank
  // reads the same answers: all in their arenas, the zero-copy path (its
  // part of everyone's tensors, then one barrier so no rank returns before
  // its outputs are written and its inputs read); otherwise the staging
  // path, where ranks that skipped block 0's copy make it up before one
  // more barrier.
  const bool arenas = !slots_.arenas.empty();
  const bool mine_in_arena =
      arenas &&
      publish_arena_pieces(exchange_area(me), pieces, slots_.arenas[static_cast<size_t>(me)], slots_.arena_bytes,
                           esize) &&
      count > 0;
  for (int64_t p = 0; p < blocks + 2; ++p) {
    if (p >= 2) copy_out(p - 2);
    if (p >= 1 && p - 1 < blocks) reduce(p - 1);
    if (p < blocks && !(p == 0 && mine_in_arena)) copy_in(p);
    if (p < blocks + 1) barrier();
    if (p == 0 && arenas && count > 0) {
      const int in_arena = ranks_in_arena();
      if (in_arena == n && totals_agree()) {
        reduce_in_place_of_all(count, dtype, op, prescale, scale);
        barrier();
        ++calls_;
        ++zero_copy_calls_;
        return Status::ok();
      }
      if (mine_in_arena) copy_in(0);
      if (in_arena > 0) barrier();
    }
  }
  if (streaming) streaming_stores_done();  // before the caller hands the outputs to another thread
  block_sequence_ += blocks;
  ++calls_;
  return Status::ok();
}

}  // namespace chorus::detail
