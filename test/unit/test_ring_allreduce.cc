// The pipelined ring on in-process ranks (threads over InProcessLinks):
// world sizes 1..8, counts around the rank count, primes and large, every
// dtype and op, segments from one element to larger than a chunk; every run
// also checks that the ring keeps PeerLink's contract on send memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "typed_values.h"
#include "kernels/reduce_kernels.h"
#include "dataplane/algorithms/ring_allreduce.h"
#include "comm/loopback/in_process_links.h"
#include "contract_checking_link.h"
#include "exact_allreduce_case.h"
#include "exact_reduction_values.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;

namespace {

// Runs the ring on `size` threads; returns the number of wrong elements
// over all ranks, plus any breach of the send-memory contract (and throws
// on a transport error).
int64_t run_ring(int size, int64_t count, DataType dt, ReduceOp op, int64_t segment_bytes,
                 bool in_place = true, double scale = 1.0, int64_t divisor = 1) {
  auto net = make_in_process_network(size);
  const auto outcomes = on_thread_ranks<RankOutcome>(size, [&](int r) {
    RankOutcome o;
    ContractCheckingLink link(make_in_process_link(net, r));
    ExactAllreduceCase c(count, dt, op, r, ring_scratch_bytes(count, dt, size), in_place);
    o.status = ring_allreduce(link, c.input(), c.result(), count, dt, op, c.scratch.data(),
                              ring_options(segment_bytes, scale, divisor));
    o.wrong += c.wrong(size, scale, divisor);
    o.wrong += link.breaches;
    return o;
  });
  for (const RankOutcome& o : outcomes) REQUIRE(o.status.is_ok());
  return total_wrong(outcomes);
}

}  // namespace

TEST_CASE("Ring chunks cover the count, larger ones first", "[ring]") {
  for (int64_t count : {0, 1, 5, 7, 8, 9, 1000003}) {
    for (int parts = 1; parts <= 8; ++parts) {
      int64_t next = 0;
      for (int c = 0; c < parts; ++c) {
        const ChunkRange r = even_chunk(count, parts, c);
        REQUIRE(r.offset == next);
        REQUIRE(r.length >= count / parts);
        REQUIRE(r.length <= count / parts + 1);
        next += r.length;
      }
      REQUIRE(next == count);
    }
  }
  REQUIRE(ring_scratch_bytes(10, DataType::kFloat32, 3) == 2 * 4 * 4);
  REQUIRE(ring_scratch_bytes(10, DataType::kFloat32, 1) == 0);
}

TEST_CASE("Ring allreduce: world sizes 1..8, counts around n, primes and large", "[ring][matrix]") {
  for (int size = 1; size <= 8; ++size) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{size - 1}, int64_t{size}, int64_t{size + 1},
                          int64_t{13}, int64_t{101}, int64_t{100003}}) {
      for (int64_t segment : {int64_t{4}, int64_t{60}, int64_t{256 << 10}}) {
        INFO("size " << size << ", count " << count << ", segment bytes " << segment);
        if (count > 1000 && segment < 60) continue;  // one-element segments of a large count: slow, adds nothing
        REQUIRE(run_ring(size, count, DataType::kFloat32, ReduceOp::kSum, segment) == 0);
        REQUIRE(run_ring(size, count, DataType::kInt64, ReduceOp::kMax, segment) == 0);
      }
    }
  }
}

TEST_CASE("Ring allreduce: every dtype and op", "[ring]") {
  chorus::test::for_each_dtype_and_op([](DataType dt, ReduceOp op) {
    for (int size : {2, 3, 5}) {
      INFO(dtype_name(dt) << " " << reduce_op_name(op) << " on " << size << " ranks");
      REQUIRE(run_ring(size, 1031, dt, op, 64) == 0);
    }
  });
}

TEST_CASE("Ring allreduce out of place leaves the input alone and scales the result", "[ring]") {
  for (int size : {1, 2, 3, 4, 7}) {
    for (int64_t count : {int64_t{1}, int64_t{size + 1}, int64_t{4099}}) {
      INFO("size " << size << ", count " << count);
      REQUIRE(run_ring(size, count, DataType::kFloat32, ReduceOp::kSum, 256, false) == 0);
      REQUIRE(run_ring(size, count, DataType::kFloat64, ReduceOp::kSum, 256, false, 0.5, 4) == 0);
      REQUIRE(run_ring(size, count, DataType::kInt32, ReduceOp::kSum, 256, true, 1.0, size) == 0);
      REQUIRE(run_ring(size, count, DataType::kInt64, ReduceOp::kMax, 256, false, 3.0, 1) == 0);
    }
  }
}
