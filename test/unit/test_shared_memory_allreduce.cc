// The shared-memory allreduce on in-process ranks (threads over one heap
// region): world sizes 1..8, counts around the rank count, primes and large,
// tensors cut into pieces differently on every rank, every dtype and op,
// scaling, and many calls in a row with ranks running at different speeds.
// The same for the zero-copy path (tensors in every rank's arena), and for
// calls where only some ranks' tensors lie in their arenas (staged).
// Both paths give the same bits.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../mpi/typed_values.h"
#include "kernels/reduce_kernels.h"
#include "dataplane/algorithms/shared_memory_allreduce.h"
#include "dataplane/algorithms/zero_copy_allreduce.h"
#include "exact_reduction_values.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;

namespace {

// Cuts `count` elements of `data` into pieces of random sizes (some empty),
// a different cut per rank.
std::vector<ReducePiece> cut(char* in, char* out, int64_t count, int64_t esize, uint32_t seed) {
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
};

// The result element i must have: op over ranks of (input * prescale),
// then * factor / divisor; integers truncate at each scaling step, as the
// other data planes do.
double expected(const Case& c, int64_t i) {
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

// Runs one allreduce on c.size threads; returns the number of wrong
// elements over all ranks. The call must be zero-copy exactly when every
// rank's tensors lie in its arena (and fit its exchange area): a wrong path
// counts as a wrong element.
int64_t run(const Case& c) {
  HeapStaging group(c.size, c.block_bytes, c.placement == Placement::kHeap ? 0 : kTestArenaBytes);
  const int64_t esize = dtype_size(c.dt);
  std::vector<int64_t> pieces_of(static_cast<size_t>(c.size)), zero_copy_of(static_cast<size_t>(c.size));
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
    o.status = shm.allreduce(pieces, c.dt, c.op, c.prescale, PostScale{c.factor, c.divisor});
    pieces_of[static_cast<size_t>(r)] = static_cast<int64_t>(pieces.size());
    zero_copy_of[static_cast<size_t>(r)] = shm.zero_copy_calls();
    for (int64_t i = 0; i < c.count; ++i) o.wrong += load(result, i, c.dt) != expected(c, i);
    if (!c.in_place && std::vector<char>(in, in + c.count * esize) != original) ++o.wrong;  // only read
    return o;
  });
  for (const RankOutcome& o : outcomes) REQUIRE(o.status.is_ok());
  bool zero_copy = c.placement == Placement::kArenas && c.size > 1 && c.count > 0;
  for (int64_t p : pieces_of) zero_copy = zero_copy && p <= kZeroCopyMaxPieces;
  int64_t wrong_path = 0;
  for (int64_t z : zero_copy_of) wrong_path += z != (zero_copy ? 1 : 0);
  return total_wrong(outcomes) + wrong_path;
}

// Every world size 1..8 with counts around it, primes and large, whole and
// cut into pieces, each as a float32 sum in place and an int64 max out of
// place. REQUIREs inside: call from the test's thread.
void sizes_and_counts(Placement placement, const std::vector<int64_t>& block_sizes) {
  for (int size = 1; size <= 8; ++size) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{size - 1}, int64_t{size}, int64_t{size + 1},
                          int64_t{13}, int64_t{101}, int64_t{100003}}) {
      for (int64_t block : block_sizes) {
        for (bool pieces : {false, true}) {
          INFO("placement " << int(placement) << ", size " << size << ", count " << count << ", block bytes "
                            << block << ", pieces " << pieces);
          Case c;
          c.placement = placement;
          c.size = size;
          c.count = count;
          c.block_bytes = block;
          c.pieces = pieces;
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
void every_dtype_and_op(Placement placement, int64_t count, int64_t block_bytes) {
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
      REQUIRE(run(c) == 0);
    }
  });
}

// Prescale and postscale on `sizes` ranks: float64 out of place, int32
// Average in place (the truncated mean), and a negative prescale, which
// flips min and max (each input is scaled before it is compared).
void scalings(Placement placement, const std::vector<int>& sizes, int64_t large_count, int64_t block_bytes) {
  for (int size : sizes) {
    for (int64_t count : {int64_t{1}, int64_t{size + 1}, large_count}) {
      INFO("placement " << int(placement) << ", size " << size << ", count " << count);
      Case c;
      c.placement = placement;
      c.size = size;
      c.count = count;
      c.block_bytes = block_bytes;
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

}  // namespace

TEST_CASE("Shared-memory allreduce: world sizes 1..8, counts around n, primes and large", "[shm]") {
  sizes_and_counts(Placement::kHeap, {64, 4096, 1 << 20});
}

TEST_CASE("Shared-memory allreduce: every dtype and op", "[shm]") { every_dtype_and_op(Placement::kHeap, 1031, 256); }

TEST_CASE("Shared-memory allreduce scales before and after, out of place leaves the input alone", "[shm]") {
  scalings(Placement::kHeap, {1, 2, 3, 4, 7}, 4099, 512);
}

TEST_CASE("Shared-memory allreduce: staged calls large enough for streaming stores", "[shm]") {
  // Past kZeroCopyStreamingBytes the staged path streams its results into
  // the outputs too: scaled ones through a small buffer, plain ones directly;
  // the cut pieces put outputs off every alignment. Also when only some
  // ranks' tensors lie in their arenas.
  const int64_t count = kZeroCopyStreamingBytes / 4 + 13;
  scalings(Placement::kHeap, {2, 3}, count, 1 << 20);
  scalings(Placement::kArenasButRank0, {3}, count, 1 << 20);
}

TEST_CASE("Shared-memory allreduce: many calls in a row, ranks at different speeds", "[shm]") {
  // One-block calls: a rank that finishes early starts the next call while
  // others still copy out of the previous one's blocks; the staging blocks
  // must alternate across calls for that to be safe.
  for (int size : {2, 3, 4}) {
    HeapStaging group(size, 256);
    const int calls = 300;
    const auto wrong = on_thread_ranks<int64_t>(size, [&](int r) {
      int64_t bad = 0;
      SharedMemoryAllreduce shm(group.slots(r));
      std::mt19937 rng(static_cast<uint32_t>(r) + 11);
      for (int call = 0; call < calls; ++call) {
        const int64_t count = 1 + call % 64;  // at most one 256-byte block of float32
        std::vector<float> buf(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) buf[static_cast<size_t>(i)] = float(call * 100 + r + i);
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
        bad += !shm.allreduce({{buf.data(), buf.data(), count}}, DataType::kFloat32, ReduceOp::kSum, 1.0, {}).is_ok();
        for (int64_t i = 0; i < count; ++i) {
          bad += buf[static_cast<size_t>(i)] != float(size * (call * 100 + i) + size * (size - 1) / 2);
        }
      }
      return bad;
    });
    REQUIRE(total(wrong) == 0);
  }
}

TEST_CASE("Shared-memory allreduce: calls of changing sizes and dtypes in a row", "[shm]") {
  // Multi-block calls with odd block counts, empty calls in between, and the
  // element size (so the part stride) changing from call to call.
  const DataType dtypes[] = {DataType::kFloat64, DataType::kFloat16, DataType::kInt32, DataType::kUInt8};
  const int64_t counts[] = {0, 1, 37, 100, 0, 333, 5, 1000};
  for (int size : {2, 3, 5}) {
    HeapStaging group(size, 256);
    const int calls = 64;
    const auto wrong = on_thread_ranks<int64_t>(size, [&](int r) {
      int64_t bad = 0;
      SharedMemoryAllreduce shm(group.slots(r));
      std::mt19937 rng(static_cast<uint32_t>(r) * 7 + 1);
      for (int call = 0; call < calls; ++call) {
        const DataType dt = dtypes[call % 4];
        const int64_t count = counts[call % 8];
        const ReduceOp op = call % 3 == 0 ? ReduceOp::kMax : ReduceOp::kSum;
        std::vector<char> buf(static_cast<size_t>(count * dtype_size(dt)) + 1);
        for (int64_t i = 0; i < count; ++i) store(buf.data(), i, dt, exact_input(op, dt, r, i + call));
        if (rng() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
        const std::vector<ReducePiece> pieces = cut(buf.data(), buf.data(), count, dtype_size(dt), rng());
        bad += !shm.allreduce(pieces, dt, op, 1.0, {}).is_ok();
        for (int64_t i = 0; i < count; ++i) {
          // exact_result(i + call) has the inputs exact_input(rank, i + call).
          bad += load(buf.data(), i, dt) != exact_result(op, dt, size, i + call);
        }
      }
      return bad;
    });
    REQUIRE(total(wrong) == 0);
  }
}

TEST_CASE("Shared-memory allreduce refuses blocks too small for one element", "[shm]") {
  HeapStaging group(2, 4);
  const auto status = on_thread_ranks<Status>(2, [&](int r) {
    SharedMemoryAllreduce shm(group.slots(r));
    double v = 1;
    return shm.allreduce({{&v, &v, 1}}, DataType::kFloat64, ReduceOp::kSum, 1.0, {});
  });
  for (const Status& s : status) {
    REQUIRE_FALSE(s.is_ok());
    REQUIRE_THAT(s.message(), Catch::Contains("4 bytes") && Catch::Contains("float64 element per rank (2 ranks)"));
  }
}

TEST_CASE("Shared-memory allreduce, zero-copy: world sizes 1..8, counts around n, primes and large", "[shm][arena]") {
  sizes_and_counts(Placement::kArenas, {4096});
  sizes_and_counts(Placement::kArenasButRank0, {4096});
}

TEST_CASE("Shared-memory allreduce, zero-copy: every dtype and op, scaling before and after", "[shm][arena]") {
  every_dtype_and_op(Placement::kArenas, 10007, 4096);  // several 16 KiB steps, and a ragged last one
  scalings(Placement::kArenas, {2, 3, 4, 7}, 40099, 4096);
}

// Every rank's result of one float32 sum of random values (whose sum depends
// on the order of the additions), with the tensors where `placement` puts them.
std::vector<std::vector<float>> random_sums(Placement placement, int size, int64_t count, double prescale,
                                            PostScale scale) {
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
    const Status st = shm.allreduce(pieces, DataType::kFloat32, ReduceOp::kSum, prescale, scale);
    if (!st.is_ok() || shm.zero_copy_calls() != (placement == Placement::kArenas ? 1 : 0)) return std::vector<float>{};
    const float* y = reinterpret_cast<const float*>(out.data);
    return std::vector<float>(y, y + count);
  });
}

TEST_CASE("Shared-memory allreduce: zero-copy and staged calls give the same bits", "[shm][arena]") {
  // Both reduce every element in rank order, so whether a call stages or
  // not changes nothing in the result, not even the rounding.
  for (int size : {3, 4, 5}) {
    for (double prescale : {1.0, 0.3}) {
      INFO("size " << size << ", prescale " << prescale);
      const int64_t count = 20011;  // several staging blocks
      const PostScale scale{1.0, size};
      const auto zero_copy = random_sums(Placement::kArenas, size, count, prescale, scale);
      const auto staged = random_sums(Placement::kHeap, size, count, prescale, scale);
      const auto mixed = random_sums(Placement::kArenasButRank0, size, count, prescale, scale);
      for (int r = 0; r < size; ++r) {
        REQUIRE(zero_copy[static_cast<size_t>(r)].size() == static_cast<size_t>(count));
        REQUIRE(std::memcmp(zero_copy[static_cast<size_t>(r)].data(), zero_copy[0].data(), count * 4) == 0);
        REQUIRE(std::memcmp(staged[static_cast<size_t>(r)].data(), zero_copy[0].data(), count * 4) == 0);
        REQUIRE(std::memcmp(mixed[static_cast<size_t>(r)].data(), zero_copy[0].data(), count * 4) == 0);
      }
    }
  }
}

TEST_CASE("Shared-memory allreduce: zero-copy and staged calls mixed in a row, ranks at different speeds",
          "[shm][arena]") {
  // Each rank puts each call's tensors in its arena or not on its own
  // (a per rank and call coin): some calls are zero-copy, the others stage,
  // with block 0's copy made up by the ranks that had skipped it. Ranks
  // that run ahead publish the next call's tensors while others still read
  // this call's: the exchange areas must alternate.
  for (int size : {2, 3, 4}) {
    HeapStaging group(size, 256, kTestArenaBytes);
    const int calls = 300;
    const auto results = on_thread_ranks<std::vector<int64_t>>(size, [&](int r) {
      int64_t bad = 0;
      SharedMemoryAllreduce shm(group.slots(r));
      std::mt19937 rng(static_cast<uint32_t>(r) * 5 + 2);
      std::shared_ptr<void> arena_memory = group.arena(r)->allocate(4 << 10).value_or(nullptr);
      std::vector<float> heap(1024);
      for (int call = 0; call < calls; ++call) {
        // Some empty calls; the tensors cut differently on every rank; a
        // prescale on every third call.
        const int64_t count = call % 11 == 0 ? 0 : 1 + (call * 37) % 700;  // up to 11 blocks of 64 floats
        const bool in_arena = ((call * 7 + r * 3) % 5) != 0;
        const double prescale = call % 3 == 0 ? 2.0 : 1.0;
        float* buf = in_arena ? static_cast<float*>(arena_memory.get()) : heap.data();
        for (int64_t i = 0; i < count; ++i) buf[i] = float(call * 100 + r + i);
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
        char* bytes = reinterpret_cast<char*>(buf);
        bad += !shm.allreduce(cut(bytes, bytes, count, 4, rng()), DataType::kFloat32, ReduceOp::kSum, prescale, {})
                    .is_ok();
        for (int64_t i = 0; i < count; ++i) {
          bad += buf[i] != float(prescale * (size * (call * 100 + i) + size * (size - 1) / 2));
        }
      }
      return std::vector<int64_t>{bad, shm.zero_copy_calls()};
    });
    int64_t expected_zero_copy = 0;
    for (int call = 0; call < calls; ++call) {
      bool all = call % 11 != 0;
      for (int r = 0; r < size; ++r) all = all && ((call * 7 + r * 3) % 5) != 0;
      expected_zero_copy += all ? 1 : 0;
    }
    INFO("size " << size);
    REQUIRE(expected_zero_copy > 0);
    REQUIRE(expected_zero_copy < calls);
    for (const auto& r : results) {
      REQUIRE(r[0] == 0);
      REQUIRE(r[1] == expected_zero_copy);
    }
  }
}

TEST_CASE("Shared-memory allreduce: more tensors than the exchange area describes are staged", "[shm][arena]") {
  const int size = 3;
  HeapStaging group(size, 4096, kTestArenaBytes);
  const int64_t tensors = kZeroCopyMaxPieces + 1;
  const auto results = on_thread_ranks<std::vector<int64_t>>(size, [&](int r) {
    SharedMemoryAllreduce shm(group.slots(r));
    std::shared_ptr<void> memory = group.arena(r)->allocate(tensors * 2 * 8).value_or(nullptr);
    auto* data = static_cast<double*>(memory.get());
    int64_t bad = 0;
    for (int64_t pieces : {tensors - 1, tensors}) {
      std::vector<ReducePiece> list;
      for (int64_t t = 0; t < pieces; ++t) {
        data[2 * t] = double(r + t);
        data[2 * t + 1] = double(2 * r);
        list.push_back({data + 2 * t, data + 2 * t, 2});
      }
      bad += !shm.allreduce(list, DataType::kFloat64, ReduceOp::kSum, 1.0, {}).is_ok();
      for (int64_t t = 0; t < pieces; ++t) {
        bad += data[2 * t] != double(size * t + size * (size - 1) / 2);
        bad += data[2 * t + 1] != double(size * (size - 1));
      }
    }
    return std::vector<int64_t>{bad, shm.zero_copy_calls()};
  });
  for (const auto& r : results) {
    REQUIRE(r[0] == 0);
    REQUIRE(r[1] == 1);  // the call with kZeroCopyMaxPieces tensors only
  }
}

TEST_CASE("Shared-memory allreduce, zero-copy: calls large enough for streaming stores", "[shm][arena]") {
  // Past kZeroCopyStreamingBytes the results go out with streaming stores;
  // outputs off a 16-byte boundary exercise the cached head and tail.
  const int size = 3;
  const int64_t count = kZeroCopyStreamingBytes / 4 + 13;
  HeapStaging group(size, 1 << 20, 2 * count * 4 + (1 << 20));
  const auto wrong = on_thread_ranks<int64_t>(size, [&](int r) {
    SharedMemoryAllreduce shm(group.slots(r));
    std::shared_ptr<void> memory = group.arena(r)->allocate(2 * count * 4 + 64).value_or(nullptr);
    float* in = static_cast<float*>(memory.get());
    float* out = in + count + 1;  // 4 bytes past a 64-byte boundary at most
    for (int64_t i = 0; i < count; ++i) in[i] = float((i % 1000) + r);
    int64_t bad = !shm.allreduce({{in, out, count / 2}, {in + count / 2, out + count / 2, count - count / 2}},
                                 DataType::kFloat32, ReduceOp::kSum, 1.0, {})
                       .is_ok();
    for (int64_t i = 0; i < count; ++i) bad += out[i] != float(size * (i % 1000) + size * (size - 1) / 2);
    return bad + (shm.zero_copy_calls() == 1 ? 0 : 1);
  });
  REQUIRE(total(wrong) == 0);
}
