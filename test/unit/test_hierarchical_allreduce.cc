// The hierarchical allreduce on in-process ranks (threads over
// InProcessLinks) playing several hosts: the host grid from every rank's
// first rank on its host (hosts contiguous, interleaved, shuffled, uneven),
// exact results for every dtype and op, in and out of place, scaled, counts
// below the ranks per host, and the bytes that cross between hosts: each
// rank sends 2(h-1)/h of its shard to other hosts, no more.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "typed_values.h"
#include "comm/loopback/in_process_links.h"
#include "contract_checking_link.h"
#include "exact_allreduce_case.h"
#include "dataplane/algorithms/hierarchical_allreduce.h"
#include "exact_reduction_values.h"
#include "kernels/reduce_kernels.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;

namespace {

// `host_of[r]`: a label per rank; returns each rank's first rank on its host.
std::vector<int> first_ranks(const std::vector<int>& host_of) {
  std::vector<int> first(host_of.size());
  for (size_t r = 0; r < host_of.size(); ++r) {
    size_t f = 0;
    while (host_of[f] != host_of[r]) ++f;
    first[r] = static_cast<int>(f);
  }
  return first;
}

// Counts the bytes each rank sends to ranks on other hosts.
class CrossHostCounter final : public PeerLink {
 public:
  CrossHostCounter(std::unique_ptr<PeerLink> inner, std::vector<int> host_of)
      : inner_(std::move(inner)), host_of_(std::move(host_of)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) override {
    if (host_of_[static_cast<size_t>(peer)] != host_of_[static_cast<size_t>(rank())]) *cross_bytes += bytes;
    return inner_->isend(peer, tag, data, bytes, request);
  }
  Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) override {
    return inner_->irecv(peer, tag, data, bytes, request);
  }
  Status wait(Request request) override { return inner_->wait(request); }
  std::shared_ptr<int64_t> cross_bytes = std::make_shared<int64_t>(0);

 private:
  std::unique_ptr<PeerLink> inner_;
  std::vector<int> host_of_;
};

struct HierarchicalRun {
  int64_t wrong = 0;
  std::vector<int64_t> cross_bytes;  // per rank
};

// Runs the hierarchical allreduce with ranks on the hosts `host_of` says.
HierarchicalRun run_hierarchical(const std::vector<int>& host_of, int64_t count, DataType dt, ReduceOp op,
                                 int64_t segment_bytes, bool in_place = true, double scale = 1.0,
                                 int64_t divisor = 1) {
  const int size = static_cast<int>(host_of.size());
  const std::vector<int> first = first_ranks(host_of);
  auto net = make_in_process_network(size);
  struct Outcome {
    RankOutcome rank;
    int64_t cross_bytes = 0;
  };
  const auto outcomes = on_thread_ranks<Outcome>(size, [&](int r) {
    Outcome o;
    auto counter = std::make_unique<CrossHostCounter>(make_in_process_link(net, r), host_of);
    const std::shared_ptr<int64_t> crossed = counter->cross_bytes;
    ContractCheckingLink link(std::move(counter));
    const HostGrid grid = host_grid(first, r);
    ExactAllreduceCase c(count, dt, op, r, hierarchical_scratch_bytes(grid, count, dt), in_place);
    o.rank.status = hierarchical_allreduce(link, grid, c.input(), c.result(), count, dt, op, c.scratch.data(),
                                           ring_options(segment_bytes, scale, divisor));
    o.rank.wrong += c.wrong(size, scale, divisor);
    o.rank.wrong += link.breaches;
    o.cross_bytes = *crossed;
    return o;
  });
  HierarchicalRun run;
  for (const Outcome& o : outcomes) {
    REQUIRE(o.rank.status.is_ok());
    run.wrong += o.rank.wrong;
    run.cross_bytes.push_back(o.cross_bytes);
  }
  return run;
}

const std::vector<std::vector<int>> kLayouts = {
    {0, 0, 1, 1},           // two hosts of two, ranks in host order
    {0, 1, 0, 1},           // interleaved: hosts {0, 2} and {1, 3}
    {0, 0, 0, 1, 1, 1},     // two hosts of three
    {0, 0, 1, 1, 2, 2},     // three hosts of two
    {0, 1, 1, 0, 2, 2},     // shuffled: {0, 3}, {1, 2}, {4, 5}
    {0, 0, 0, 0, 1, 1, 1, 1},
};

}  // namespace

TEST_CASE("Host grid: each rank's host and its place across hosts", "[hierarchical]") {
  const std::vector<int> interleaved = first_ranks({0, 1, 0, 1});
  HostGrid g = host_grid(interleaved, 2);
  REQUIRE(g.usable());
  REQUIRE(g.local == std::vector<int>{0, 2});
  REQUIRE(g.cross == std::vector<int>{2, 3});
  g = host_grid(first_ranks({0, 1, 1, 0, 2, 2}), 5);
  REQUIRE(g.local == std::vector<int>{4, 5});
  REQUIRE(g.cross == std::vector<int>{3, 2, 5});  // place 1 on hosts {0, 3}, {1, 2}, {4, 5}

  // One host, or one rank per host: nothing to split, no complaint.
  g = host_grid(first_ranks({0, 0, 0}), 1);
  REQUIRE_FALSE(g.usable());
  REQUIRE(g.refusal.empty());
  g = host_grid(first_ranks({0, 1, 2}), 1);
  REQUIRE_FALSE(g.usable());
  REQUIRE(g.refusal.empty());

  // Uneven hosts: refused on every rank alike, naming both hosts.
  for (int r = 0; r < 4; ++r) {
    g = host_grid(first_ranks({0, 0, 0, 1}), r);
    REQUIRE_FALSE(g.usable());
    REQUIRE(g.refusal == "the hosts hold different numbers of ranks (3 on the host of rank 0, 1 on the host of rank 3)");
  }
}

TEST_CASE("Hierarchical allreduce: host layouts, counts below and above the ranks per host", "[hierarchical]") {
  for (const auto& layout : kLayouts) {
    for (int64_t count : {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{101}, int64_t{100003}}) {
      for (int64_t segment : {int64_t{8}, int64_t{256 << 10}}) {
        if (count > 1000 && segment < 60) continue;
        INFO("ranks " << layout.size() << ", host of rank 1 " << layout[1] << ", count " << count << ", segment "
                      << segment);
        REQUIRE(run_hierarchical(layout, count, DataType::kFloat32, ReduceOp::kSum, segment).wrong == 0);
        REQUIRE(run_hierarchical(layout, count, DataType::kInt64, ReduceOp::kMax, segment, false).wrong == 0);
      }
    }
  }
}

TEST_CASE("Hierarchical allreduce: every dtype and op, scaled, out of place", "[hierarchical]") {
  chorus::test::for_each_dtype_and_op([](DataType dt, ReduceOp op) {
    INFO(dtype_name(dt) << " " << reduce_op_name(op));
    REQUIRE(run_hierarchical({0, 0, 1, 1, 2, 2}, 1031, dt, op, 64).wrong == 0);
  });
  REQUIRE(run_hierarchical({0, 0, 0, 1, 1, 1}, 4099, DataType::kFloat64, ReduceOp::kSum, 256, false, 0.5, 6).wrong ==
          0);
  REQUIRE(run_hierarchical({0, 1, 0, 1}, 4099, DataType::kInt32, ReduceOp::kSum, 256, true, 1.0, 4).wrong == 0);
}

TEST_CASE("Hierarchical allreduce: each rank sends only its shard's ring between hosts", "[hierarchical]") {
  // 4 hosts of 2, 8000 float32: a shard is 4000 elements, and its ring over
  // 4 hosts sends 2 * 3/4 of it from each rank: 6000 elements, 24000 bytes.
  // (The flat ring over 8 ranks sends 2 * 7/8 of everything from each rank.)
  const HierarchicalRun run =
      run_hierarchical({0, 0, 1, 1, 2, 2, 3, 3}, 8000, DataType::kFloat32, ReduceOp::kSum, 1 << 20);
  REQUIRE(run.wrong == 0);
  for (int64_t sent : run.cross_bytes) REQUIRE(sent == 24000);
}

TEST_CASE("Hierarchical allreduce refuses a grid it cannot use", "[hierarchical]") {
  auto net = make_in_process_network(1);
  auto link = make_in_process_link(net, 0);
  HostGrid uneven = host_grid(first_ranks({0, 0, 1}), 0);
  float x = 1;
  const Status s = hierarchical_allreduce(*link, uneven, &x, &x, 1, DataType::kFloat32, ReduceOp::kSum, nullptr, {});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message().find("different numbers of ranks") != std::string::npos);
}
