// The shared-memory allreduce on in-process ranks (threads over one heap
// region): world sizes 1..8, counts around the rank count, primes and large,
// tensors cut into pieces differently on every rank, every dtype and op,
// scaling, and many calls in a row with ranks running at different speeds.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "../mpi/typed_values.h"
#include "algorithms/reduce_kernels.h"
#include "algorithms/shared_memory_allreduce.h"
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

struct Case {
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

// Runs one allreduce on c.size threads; returns the number of wrong
// elements over all ranks.
int64_t run(const Case& c) {
  HeapStaging group(c.size, c.block_bytes);
  const int64_t esize = dtype_size(c.dt);
  const auto outcomes = on_thread_ranks<RankOutcome>(c.size, [&](int r) {
    RankOutcome o;
    SharedMemoryAllreduce shm(group.slots(r));
    std::vector<char> in(static_cast<size_t>(c.count * esize) + 1), out(in.size(), 0);
    for (int64_t i = 0; i < c.count; ++i) store(in.data(), i, c.dt, exact_input(c.op, c.dt, r, i));
    const std::vector<char> original = in;
    char* result = c.in_place ? in.data() : out.data();
    const std::vector<ReducePiece> pieces =
        c.pieces ? cut(in.data(), result, c.count, esize, 17u * static_cast<uint32_t>(r) + 3)
                 : std::vector<ReducePiece>{{in.data(), result, c.count}};
    o.status = shm.allreduce(pieces, c.dt, c.op, c.prescale, PostScale{c.factor, c.divisor});
    for (int64_t i = 0; i < c.count; ++i) {
      // Integers truncate at each scaling step, as the other data planes do.
      double want = exact_result(c.op, c.dt, c.size, i) * c.prescale;
      if (c.prescale != 1.0 && !is_floating(c.dt)) {
        want = 0;
        for (int k = 0; k < c.size; ++k) want += std::trunc(exact_input(c.op, c.dt, k, i) * c.prescale);
      }
      want = want * c.factor / double(c.divisor);
      if (!is_floating(c.dt)) want = std::trunc(want);
      o.wrong += load(result, i, c.dt) != want;
    }
    if (!c.in_place && in != original) ++o.wrong;  // the input is only read
    return o;
  });
  for (const RankOutcome& o : outcomes) REQUIRE(o.status.is_ok());
  return total_wrong(outcomes);
}

}  // namespace

TEST_CASE("Shared-memory allreduce: world sizes 1..8, counts around n, primes and large", "[shm]") {
  for (int size = 1; size <= 8; ++size) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{size - 1}, int64_t{size}, int64_t{size + 1},
                          int64_t{13}, int64_t{101}, int64_t{100003}}) {
      for (int64_t block : {int64_t{64}, int64_t{4096}, int64_t{1} << 20}) {
        for (bool pieces : {false, true}) {
          INFO("size " << size << ", count " << count << ", block bytes " << block << ", pieces " << pieces);
          Case c;
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

TEST_CASE("Shared-memory allreduce: every dtype and op", "[shm]") {
  chorus::test::for_each_dtype_and_op([](DataType dt, ReduceOp op) {
    for (int size : {2, 3, 5}) {
      INFO(dtype_name(dt) << " " << reduce_op_name(op) << " on " << size << " ranks");
      Case c;
      c.size = size;
      c.count = 1031;
      c.dt = dt;
      c.op = op;
      c.block_bytes = 256;
      REQUIRE(run(c) == 0);
    }
  });
}

TEST_CASE("Shared-memory allreduce scales before and after, out of place leaves the input alone", "[shm]") {
  for (int size : {1, 2, 3, 4, 7}) {
    for (int64_t count : {int64_t{1}, int64_t{size + 1}, int64_t{4099}}) {
      INFO("size " << size << ", count " << count);
      Case c;
      c.size = size;
      c.count = count;
      c.block_bytes = 512;
      c.in_place = false;
      c.dt = DataType::kFloat64;
      c.prescale = 0.5;
      c.factor = 3.0;
      c.divisor = 4;
      REQUIRE(run(c) == 0);
      c.dt = DataType::kInt32;
      c.prescale = 2.0;
      c.factor = 1.0;
      c.divisor = size;  // Average of integers: the truncated mean
      c.in_place = true;
      REQUIRE(run(c) == 0);
    }
  }
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
