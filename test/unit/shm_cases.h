#pragma once
// The cases the shared-memory allreduce tests share (staged, zero-copy and
// single-copy paths): tensors cut into pieces differently on every rank,
// placed on the heap or in the arenas, every dtype, op and scaling, and
// the check that each call took the path it must.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "typed_values.h"
#include "dataplane/algorithms/shared_memory_allreduce.h"
#include "dataplane/algorithms/zero_copy_allreduce.h"
#include "exact_reduction_values.h"
#include "kernels/reduce_kernels.h"
#include "thread_ranks.h"

namespace chorus::test::shm_cases {

using namespace chorus::detail;

// Under ThreadSanitizer, up to 8 rank threads on two cores meet in barriers
// that each cost milliseconds there: a large count cut into thousands of
// pieces (a barrier each) on 4-8 ranks alone outlasted the test's timeout.
// That sweep runs in the other builds; TSan keeps every shape up to 3 ranks.
#if defined(__SANITIZE_THREAD__)  // GCC
constexpr bool kUnderThreadSanitizer = true;
#elif defined(__has_feature)  // Clang
constexpr bool kUnderThreadSanitizer = __has_feature(thread_sanitizer);
#else
constexpr bool kUnderThreadSanitizer = false;
#endif


// Cuts `count` elements of `data` into pieces of random sizes (some empty),
// a different cut per rank.
inline std::vector<ReducePiece> cut(char* in, char* out, int64_t count, int64_t esize, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<ReducePiece> pieces;
  int64_t at = 0;
  while (at < count) {
    const int64_t take = std::min<int64_t>(count - at, std::uniform_int_distribution<int64_t>(0, 37)(rng));
    pieces.push_back({in + at * esize, out + at * esize, take});
    at += take;
  }
  if (rng() % 2) pieces.push_back({in + at * esize, out + at * esize, 0});  // a trailing empty tensor
  return pieces;
}

// Where the ranks' tensors lie: on the heap, in every rank's arena
// (zero-copy), or in the arenas of all ranks but rank 0 (staged).
enum class Placement { kHeap, kArenas, kArenasButRank0 };

// Plain memory that is never touched costs nothing: room for the streaming
// cases (two float64 tensors of 16 MiB).
constexpr int64_t kTestArenaBytes = 64 << 20;

// A rank's buffer of `bytes`, from its arena or the heap.
struct Buffer {
  std::shared_ptr<void> arena_memory;
  std::vector<char> heap;
  char* data = nullptr;
  Buffer(const HeapStaging& group, int rank, bool in_arena, int64_t bytes) {
    if (in_arena) {
      auto allocated = group.arena(rank)->allocate(bytes + 1);
      if (!allocated.is_ok()) throw std::runtime_error("test arena too small: " + allocated.status().message());
      arena_memory = std::move(allocated).value();
      data = static_cast<char*>(arena_memory.get());
    } else {
      heap.resize(static_cast<size_t>(bytes) + 1);
      data = heap.data();
    }
  }
};

struct Case {
  Placement placement = Placement::kHeap;
  int size = 2;
  int64_t count = 0;
  DataType dt = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int64_t block_bytes = 4096;
  bool in_place = true;
  bool pieces = true;
  double prescale = 1.0, factor = 1.0;
  int64_t divisor = 1;
  bool single_copy = false;  // a call the route gives to single copy
};

// The result element i must have: op over ranks of (input * prescale),
// then * factor / divisor; integers truncate at each scaling step, as the
// other data planes do.
inline double expected(const Case& c, int64_t i) {
  double want = exact_result(c.op, c.dt, c.size, i);
  if (c.prescale != 1.0) {
    for (int k = 0; k < c.size; ++k) {
      double v = exact_input(c.op, c.dt, k, i) * c.prescale;
      if (!is_floating(c.dt)) v = std::trunc(v);
      if (k == 0) want = v;
      else if (c.op == ReduceOp::kMin) want = std::min(want, v);
      else if (c.op == ReduceOp::kMax) want = std::max(want, v);
      else if (c.op == ReduceOp::kProduct) want *= v;
      else want += v;
    }
  }
  want = want * c.factor / double(c.divisor);
  return is_floating(c.dt) ? want : std::trunc(want);
}

// The path a call must take: zero-copy when every rank's tensors lie in its
// arena, else single copy when asked for; and only when there is something
// to reduce among several ranks and the tensors fit the exchange areas.
inline SharedPath path_of(const Case& c, const std::vector<int64_t>& pieces_of) {
  bool described = c.size > 1 && c.count > 0;
  for (int64_t p : pieces_of) described = described && p <= kZeroCopyMaxPieces;
  if (described && c.placement == Placement::kArenas) return SharedPath::kZeroCopy;
  return described && c.single_copy ? SharedPath::kSingleCopy : SharedPath::kStaged;
}

// Runs one allreduce on c.size threads; returns the number of wrong
// elements over all ranks. A call that took another path than path_of()
// counts as a wrong element.
inline int64_t run(const Case& c) {
  HeapStaging group(c.size, c.block_bytes, c.placement == Placement::kHeap ? 0 : kTestArenaBytes);
  const int64_t esize = dtype_size(c.dt);
  std::vector<int64_t> pieces_of(static_cast<size_t>(c.size));
  std::vector<SharedPath> path(static_cast<size_t>(c.size));
  const auto outcomes = on_thread_ranks<RankOutcome>(c.size, [&](int r) {
    RankOutcome o;
    SharedMemoryAllreduce shm(group.slots(r));
    const bool in_arena = c.placement == Placement::kArenas || (c.placement == Placement::kArenasButRank0 && r > 0);
    Buffer in_buffer(group, r, in_arena, c.count * esize), out_buffer(group, r, in_arena, c.count * esize);
    char* in = in_buffer.data;
    for (int64_t i = 0; i < c.count; ++i) store(in, i, c.dt, exact_input(c.op, c.dt, r, i));
    const std::vector<char> original(in, in + c.count * esize);
    char* result = c.in_place ? in : out_buffer.data;
    const std::vector<ReducePiece> pieces =
        c.pieces ? cut(in, result, c.count, esize, 17u * static_cast<uint32_t>(r) + 3)
                 : std::vector<ReducePiece>{{in, result, c.count}};
    o.status = shm.allreduce(pieces, c.dt, c.op, c.prescale, PostScale{c.factor, c.divisor}, c.single_copy);
    int64_t non_empty = 0;
    for (const ReducePiece& p : pieces) non_empty += p.count > 0 ? 1 : 0;
    pieces_of[static_cast<size_t>(r)] = non_empty;
    path[static_cast<size_t>(r)] = c.size > 1 ? shm.last_path() : SharedPath::kStaged;
    for (int64_t i = 0; i < c.count; ++i) o.wrong += load(result, i, c.dt) != expected(c, i);
    if (!c.in_place && std::vector<char>(in, in + c.count * esize) != original) ++o.wrong;  // only read
    return o;
  });
  for (const RankOutcome& o : outcomes) REQUIRE(o.status.is_ok());
  int64_t wrong_path = 0;
  for (SharedPath p : path) wrong_path += p != path_of(c, pieces_of);
  return total_wrong(outcomes) + wrong_path;
}

// Every world size 1..8 with counts around it, primes and large, whole and
// cut into pieces, each as a float32 sum in place and an int64 max out of
// place. REQUIREs inside: call from the test's thread.
inline void sizes_and_counts(Placement placement, const std::vector<int64_t>& block_sizes, bool single_copy = false) {
  for (int size = 1; size <= 8; ++size) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{size - 1}, int64_t{size}, int64_t{size + 1},
                          int64_t{13}, int64_t{101}, int64_t{100003}}) {
      for (int64_t block : block_sizes) {
        for (bool pieces : {false, true}) {
          if (kUnderThreadSanitizer && size > 3 && pieces && count > 101) continue;
          INFO("placement " << int(placement) << ", size " << size << ", count " << count << ", block bytes "
                            << block << ", pieces " << pieces);
          Case c;
          c.placement = placement;
          c.size = size;
          c.count = count;
          c.block_bytes = block;
          c.pieces = pieces;
          c.single_copy = single_copy;
          REQUIRE(run(c) == 0);
          c.dt = DataType::kInt64;
          c.op = ReduceOp::kMax;
          c.in_place = false;
          REQUIRE(run(c) == 0);
        }
      }
    }
  }
}

// Every dtype and op on 2, 3 and 5 ranks.
inline void every_dtype_and_op(Placement placement, int64_t count, int64_t block_bytes, bool single_copy = false) {
  chorus::test::for_each_dtype_and_op([&](DataType dt, ReduceOp op) {
    for (int size : {2, 3, 5}) {
      INFO(dtype_name(dt) << " " << reduce_op_name(op) << " on " << size << " ranks");
      Case c;
      c.placement = placement;
      c.size = size;
      c.count = count;
      c.dt = dt;
      c.op = op;
      c.block_bytes = block_bytes;
      c.single_copy = single_copy;
      REQUIRE(run(c) == 0);
      c.in_place = false;
      REQUIRE(run(c) == 0);
    }
  });
}

// Prescale and postscale on `sizes` ranks: float64 out of place, int32
// Average in place (the truncated mean), and a negative prescale, which
// flips min and max (each input is scaled before it is compared).
inline void scalings(Placement placement, const std::vector<int>& sizes, int64_t large_count, int64_t block_bytes,
                     bool single_copy = false) {
  for (int size : sizes) {
    for (int64_t count : {int64_t{1}, int64_t{size + 1}, large_count}) {
      INFO("placement " << int(placement) << ", size " << size << ", count " << count);
      Case c;
      c.placement = placement;
      c.size = size;
      c.count = count;
      c.block_bytes = block_bytes;
      c.single_copy = single_copy;
      c.in_place = false;
      c.dt = DataType::kFloat64;
      c.prescale = 0.5;
      c.factor = 3.0;
      c.divisor = 4;
      REQUIRE(run(c) == 0);
      c.dt = DataType::kInt32;
      c.prescale = 2.0;
      c.factor = 1.0;
      c.divisor = size;
      c.in_place = true;
      REQUIRE(run(c) == 0);
      c.dt = DataType::kFloat32;
      c.op = ReduceOp::kMin;
      c.prescale = -1.0;
      c.divisor = 1;
      REQUIRE(run(c) == 0);
    }
  }
}


// Every rank's result of one float32 sum of random values (whose sum depends
// on the order of the additions), with the tensors where `placement` puts them.
inline std::vector<std::vector<float>> random_sums(Placement placement, int size, int64_t count, double prescale,
                                                   PostScale scale, bool single_copy = false) {
  HeapStaging group(size, 4096, kTestArenaBytes);
  return on_thread_ranks<std::vector<float>>(size, [&](int r) {
    SharedMemoryAllreduce shm(group.slots(r));
    const bool in_arena = placement == Placement::kArenas || (placement == Placement::kArenasButRank0 && r > 0);
    Buffer in(group, r, in_arena, count * 4), out(group, r, in_arena, count * 4);
    std::mt19937 rng(static_cast<uint32_t>(r) + 11);
    std::uniform_real_distribution<float> value(-1000.0f, 1000.0f);
    float* x = reinterpret_cast<float*>(in.data);
    for (int64_t i = 0; i < count; ++i) x[i] = value(rng) * (i % 7 == 0 ? 1e-6f : 1.0f);
    const int64_t split = count / (r + 2);  // cut differently on every rank, few enough pieces for zero-copy
    const std::vector<ReducePiece> pieces{{in.data, out.data, split},
                                          {in.data + split * 4, out.data + split * 4, count - split}};
    const Status st = shm.allreduce(pieces, DataType::kFloat32, ReduceOp::kSum, prescale, scale, single_copy);
    const SharedPath want = placement == Placement::kArenas ? SharedPath::kZeroCopy
                            : single_copy                   ? SharedPath::kSingleCopy
                                                            : SharedPath::kStaged;
    if (!st.is_ok() || shm.last_path() != want) return std::vector<float>{};
    const float* y = reinterpret_cast<const float*>(out.data);
    return std::vector<float>(y, y + count);
  });
}

}  // namespace chorus::test::shm_cases
