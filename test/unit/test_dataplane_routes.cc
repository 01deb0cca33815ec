// In-process ranks run the production route choice (dataplane/): shared
// memory only when the ranks share a host, the ring and the transport's own
// allreduce otherwise, as CHORUS_ALLREDUCE_ALGO and the size say; each
// route gives the exact result, with every scaling.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "chorus/runtime.h"
#include "comm/loopback/loopback_backend.h"
#include "dataplane/route_choice.h"
#include "loopback_job.h"

using namespace chorus;

TEST_CASE("In-process ranks take the route production would, and every route is exact", "[dataplane][routes]") {
  const AllreduceAlgorithm algos[] = {AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kRing, AllreduceAlgorithm::kMpi,
                                      AllreduceAlgorithm::kSharedMemory};
  for (AllreduceAlgorithm algo : algos) {
    for (int per_host : {4, 2}) {
      const bool one_host = per_host == 4;
      if (algo == AllreduceAlgorithm::kSharedMemory && !one_host) continue;  // refused at init under MPI
      RuntimeOptions o = test::quiet_options();
      o.allreduce_algorithm = algo;
      o.ring_segment_bytes = 4096;        // many pipelined segments
      o.shm_single_copy_threshold_bytes = 8000;  // the 1000-float calls (two tensors) and up
      INFO("algorithm " << int(algo) << ", " << (one_host ? "one host" : "two hosts"));
      test::run_ranks(4, [&](Runtime& rt, int rank) {
        for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{1} << 18}) {
          const int64_t bytes = 2 * count * 4;  // the two tensors go as one call
          const detail::AllreduceRoute want = detail::choose_allreduce_route(o, bytes, 4, one_host);
          std::vector<float> a(static_cast<size_t>(count)), b(a.size());
          for (int64_t i = 0; i < count; ++i) a[i] = b[i] = float((i % 9) + rank);
          auto ta = std::make_shared<HostTensorView>(a.data(), DataType::kFloat32, TensorShape{count});
          auto tb = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32, TensorShape{count});
          AllreduceOptions opt;  // Average with both scalings: (sum x 2) x 0.5 / 4
          opt.prescale_factor = 2.0;
          opt.postscale_factor = 0.5;
          const detail::InternalStats before = detail::RuntimeAccess::stats(rt);
          const std::string n = "route." + std::to_string(count);
          for (auto& h : rt.grouped_allreduce_async({n + ".a", n + ".b"}, {ta, tb}, {}, opt)) h.wait();
          const detail::InternalStats after = detail::RuntimeAccess::stats(rt);
          for (int64_t i = 0; i < count; ++i) {
            const float want_value = float(4 * (i % 9) + 6) / 4.0f;
            RANK_CHECK(a[i] == want_value);
            RANK_CHECK(b[i] == want_value);
          }
          RANK_CHECK(after.ring_allreduce_ops - before.ring_allreduce_ops ==
                     (want == detail::AllreduceRoute::kRing ? 1 : 0));
          RANK_CHECK(after.shm_allreduce_ops - before.shm_allreduce_ops == (detail::on_shared_memory(want) ? 1 : 0));
          RANK_CHECK(after.shm_single_copy_ops - before.shm_single_copy_ops ==
                     (want == detail::AllreduceRoute::kSingleCopy ? 1 : 0));
          RANK_CHECK(after.allreduce_ops - before.allreduce_ops == 1);
        }
      }, o, per_host);
    }
  }
}

TEST_CASE("Route choice: single copy on one host from its threshold, never across hosts", "[dataplane][routes]") {
  using detail::AllreduceRoute;
  RuntimeOptions o;
  o.shm_single_copy_threshold_bytes = 1 << 20;
  for (AllreduceAlgorithm algo : {AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kSharedMemory}) {
    o.allreduce_algorithm = algo;
    REQUIRE(detail::choose_allreduce_route(o, (1 << 20) - 1, 2, true) == AllreduceRoute::kSharedMemory);
    REQUIRE(detail::choose_allreduce_route(o, 1 << 20, 2, true) == AllreduceRoute::kSingleCopy);
    REQUIRE(detail::choose_allreduce_route(o, 1 << 20, 2, false) == AllreduceRoute::kRing);
    REQUIRE(detail::choose_allreduce_route(o, 1 << 20, 1, true) == AllreduceRoute::kAlone);
  }
  o.allreduce_algorithm = AllreduceAlgorithm::kAuto;
  o.shm_single_copy_threshold_bytes = 0;  // every shared-memory call
  REQUIRE(detail::choose_allreduce_route(o, 4, 3, true) == AllreduceRoute::kSingleCopy);
  o.shm_threshold_bytes = 64;  // below the shared-memory threshold, single copy does not apply
  REQUIRE(detail::choose_allreduce_route(o, 4, 3, true) == AllreduceRoute::kTransport);
  o.shm_threshold_bytes = 0;
  o.shm_single_copy_threshold_bytes = -1;  // never
  REQUIRE(detail::choose_allreduce_route(o, int64_t{1} << 40, 3, true) == AllreduceRoute::kSharedMemory);
  for (AllreduceAlgorithm algo : {AllreduceAlgorithm::kRing, AllreduceAlgorithm::kMpi}) {
    o.allreduce_algorithm = algo;
    o.shm_single_copy_threshold_bytes = 0;
    REQUIRE_FALSE(detail::on_shared_memory(detail::choose_allreduce_route(o, 1 << 20, 2, true)));
  }
  REQUIRE(std::string(detail::route_name(AllreduceRoute::kSingleCopy)) == "cma");
}

TEST_CASE("CHORUS_HIERARCHICAL_ALLREDUCE carries every allreduce across even hosts, none otherwise",
          "[dataplane][routes][hierarchical]") {
  struct Layout {
    int size, per_host;
    bool hierarchical;
  };
  // Two and three hosts of two; uneven hosts (3 + 1) and one host: the usual routes.
  for (const Layout& layout : {Layout{4, 2, true}, Layout{6, 2, true}, Layout{4, 3, false}, Layout{4, 4, false}}) {
    RuntimeOptions o = test::quiet_options();
    o.hierarchical_allreduce = true;
    o.ring_segment_bytes = 4096;
    INFO(layout.size << " ranks, " << layout.per_host << " per host");
    test::run_ranks(layout.size, [&](Runtime& rt, int rank) {
      for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{1} << 17}) {
        std::vector<float> a(static_cast<size_t>(count)), b(a.size());
        for (int64_t i = 0; i < count; ++i) a[i] = b[i] = float((i % 9) + rank);
        auto ta = std::make_shared<HostTensorView>(a.data(), DataType::kFloat32, TensorShape{count});
        auto tb = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32, TensorShape{count});
        AllreduceOptions opt;  // Average with both scalings: (sum x 2) x 0.5 / n
        opt.prescale_factor = 2.0;
        opt.postscale_factor = 0.5;
        const detail::InternalStats before = detail::RuntimeAccess::stats(rt);
        const std::string n = "hier." + std::to_string(count);
        for (auto& h : rt.grouped_allreduce_async({n + ".a", n + ".b"}, {ta, tb}, {}, opt)) h.wait();
        const detail::InternalStats after = detail::RuntimeAccess::stats(rt);
        const int size = layout.size;
        for (int64_t i = 0; i < count; ++i) {
          const float want = float(size * (i % 9) + size * (size - 1) / 2) / float(size);
          RANK_CHECK(a[i] == want);
          RANK_CHECK(b[i] == want);
        }
        RANK_CHECK(after.hierarchical_allreduce_ops - before.hierarchical_allreduce_ops ==
                   (layout.hierarchical ? 1 : 0));
        RANK_CHECK(after.allreduce_ops - before.allreduce_ops == 1);
      }
    }, o, layout.per_host);
  }
  RuntimeOptions o;
  o.hierarchical_allreduce = true;
  using detail::AllreduceRoute;
  REQUIRE(detail::choose_allreduce_route(o, 4, 4, false, true) == AllreduceRoute::kHierarchical);
  REQUIRE(detail::choose_allreduce_route(o, 0, 4, false, true) == AllreduceRoute::kTransport);  // no data
  REQUIRE(detail::choose_allreduce_route(o, ReduceOp::kAdasum, 4, 4, false, true) == AllreduceRoute::kAdasum);
  REQUIRE(detail::choose_allreduce_route(o, 4, 1, false, true) == AllreduceRoute::kAlone);
}

// The host map is gathered (a collective) inside the first allreduce any
// response runs: every rank must get there at the same response, whatever
// that first call is: Adasum (its own route), no data, or an allreduce
// some ranks run for a joined rank with stand-in zeros.
TEST_CASE("CHORUS_HIERARCHICAL_ALLREDUCE: Adasum first, no data, a joined rank's stand-in",
          "[dataplane][routes][hierarchical]") {
  RuntimeOptions o = test::quiet_options();
  o.hierarchical_allreduce = true;
  o.ring_segment_bytes = 64;
  test::run_ranks(4, [&](Runtime& rt, int rank) {
    auto view = [](std::vector<float>& v) {
      return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{int64_t(v.size())});
    };
    std::vector<float> same = {1.0f, -2.0f, 3.0f, 0.5f};  // Adasum of equal vectors is that vector
    AllreduceOptions adasum;
    adasum.op = ReduceOp::kAdasum;
    const std::chrono::seconds no_hang(20);
    rt.allreduce_async("first.adasum", view(same), view(same), adasum).wait(no_hang);
    RANK_CHECK((same == std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f}));
    std::vector<float> none;
    rt.allreduce_async("then.empty", view(none), view(none), {}).wait(no_hang);
    const detail::InternalStats before = detail::RuntimeAccess::stats(rt);
    std::vector<float> v(37, float(rank + 1));
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    if (rank != 3) rt.allreduce_async("without.rank3", view(v), view(v), sum).wait(no_hang);
    rt.join_async().wait(no_hang);
    if (rank != 3) {
      for (float x : v) RANK_CHECK(x == 6.0f);  // 1 + 2 + 3, rank 3's zeros
    }
    std::vector<float> w(1001, float(rank));
    rt.allreduce_async("after.join", view(w), view(w), sum).wait(no_hang);
    for (float x : w) RANK_CHECK(x == 6.0f);
    const detail::InternalStats after = detail::RuntimeAccess::stats(rt);
    RANK_CHECK(after.hierarchical_allreduce_ops - before.hierarchical_allreduce_ops == 2);  // with the stand-in
  }, o, 2);
}
