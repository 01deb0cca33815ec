// The shared-memory allreduce on in-process ranks (threads over one heap
// region): world sizes 1..8, counts around the rank count, primes and large,
// tensors cut into pieces differently on every rank, every dtype and op,
// scaling, and many calls in a row with ranks running at different speeds.
// The same for the zero-copy path (tensors in every rank's arena), and for
// calls where only some ranks' tensors lie in their arenas (staged).
// Both paths give the same bits.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "shm_cases.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;
using namespace chorus::test::shm_cases;

TEST_CASE("Shared-memory allreduce: world sizes 1..8, counts around n, primes and large", "[shm][matrix]") {
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

TEST_CASE("Shared-memory allreduce, zero-copy: world sizes 1..8, counts around n, primes and large",
          "[shm][arena][matrix]") {
  sizes_and_counts(Placement::kArenas, {4096});
  sizes_and_counts(Placement::kArenasButRank0, {4096});
}

TEST_CASE("Shared-memory allreduce, zero-copy: every dtype and op, scaling before and after", "[shm][arena]") {
  every_dtype_and_op(Placement::kArenas, 10007, 4096);  // several 16 KiB steps, and a ragged last one
  scalings(Placement::kArenas, {2, 3, 4, 7}, 40099, 4096);
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
