// The hierarchical allreduce's NCCL plan (host only): its exact steps, the
// same calls on every member of each communicator, and, run by a host
// simulation of the NCCL calls over several hosts, the allreduce's result.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "dataplane/algorithms/hierarchical_allreduce.h"
#include "device/cuda/nccl_plan.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::detail::gpu;

namespace {

using Strings = std::vector<std::string>;

Request request(const std::string& name, int64_t n, ReduceOp op = ReduceOp::kSum) {
  Request r;
  r.name = name;
  r.shape = {n};
  r.dtype = DataType::kFloat64;
  r.op = op;
  r.type = CollectiveType::kAllreduce;
  return r;
}

Response allreduce(size_t tensors) {
  Response r;
  r.type = ResponseType::kAllreduce;
  for (size_t i = 0; i < tensors; ++i) r.names.push_back("t" + std::to_string(i));
  return r;
}

Strings described(const NcclPlan& plan) {
  Strings out;
  for (const auto& s : plan.steps) out.push_back(describe_step(s, plan.dtype));
  return out;
}

// `host_of[r]`: a label per rank -> each rank's first rank on its host.
std::vector<int> first_ranks(const std::vector<int>& host_of) {
  std::vector<int> first(host_of.size());
  for (size_t r = 0; r < host_of.size(); ++r)
    first[r] = int(std::find(host_of.begin(), host_of.end(), host_of[r]) - host_of.begin());
  return first;
}

// One rank's memory in the simulation: its fusion buffer, inputs, outputs.
struct SimRank {
  std::vector<double> fusion;
  std::vector<std::vector<double>> in, out;
  HostGrid grid;
  NcclPlan plan;
};

double* at(SimRank& r, const BufferRef& b) {
  switch (b.kind) {
    case BufferKind::kInput: return r.in[size_t(b.tensor)].data() + b.offset / 8;
    case BufferKind::kOutput: return r.out[size_t(b.tensor)].data() + b.offset / 8;
    case BufferKind::kFusion: return r.fusion.data() + b.offset / 8;
  }
  return nullptr;
}

// Step `k` of every rank's plan, as NCCL would run it (sum only, float64).
void run_step(std::vector<SimRank>& ranks, size_t k) {
  const PlanStep& s0 = ranks[0].plan.steps[k];
  for (size_t r = 0; r < ranks.size(); ++r) REQUIRE(ranks[r].plan.steps[k].kind == s0.kind);
  const int64_t c = s0.count;
  auto members = [&](size_t r) { return s0.comm == CommScope::kHost ? ranks[r].grid.local : ranks[r].grid.cross; };
  std::vector<std::vector<double>> results(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const PlanStep& s = ranks[r].plan.steps[k];
    const std::vector<int> group = members(r);
    const size_t place = size_t(std::find(group.begin(), group.end(), int(r)) - group.begin());
    results[r].assign(size_t(s.kind == StepKind::kAllGather ? c * int64_t(group.size()) : c), 0.0);
    for (size_t m = 0; m < group.size(); ++m) {
      SimRank& peer = ranks[size_t(group[m])];
      const PlanStep& ps = peer.plan.steps[k];
      for (int64_t i = 0; i < c; ++i) {
        if (s.kind == StepKind::kReduceScatter) results[r][size_t(i)] += at(peer, ps.src)[int64_t(place) * c + i];
        if (s.kind == StepKind::kAllReduce) results[r][size_t(i)] += at(peer, ps.src)[i];
        if (s.kind == StepKind::kAllGather) results[r][m * size_t(c) + size_t(i)] = at(peer, ps.src)[i];
      }
    }
  }
  for (size_t r = 0; r < ranks.size(); ++r)
    std::copy(results[r].begin(), results[r].end(), at(ranks[r], ranks[r].plan.steps[k].dst));
}

void run_copy(SimRank& r, const PlanStep& s) {
  for (int32_t t : s.tensors) {
    const int64_t n = int64_t(r.in[size_t(t)].size()), off = r.plan.copies.offsets[size_t(t)] / 8;
    for (int64_t i = 0; i < n; ++i) {
      if (s.kind == StepKind::kPack) r.fusion[size_t(off + i)] = r.in[size_t(t)][size_t(i)] * s.factor;
      else r.out[size_t(t)][size_t(i)] = r.fusion[size_t(off + i)] * s.factor / double(s.divisor);
    }
  }
}

// Runs the hierarchical plan of tensors of `counts` elements on ranks laid
// out as `host_of`; returns the elements that differ from the allreduce.
int64_t simulate(const std::vector<int>& host_of, const std::vector<int64_t>& counts, ReduceOp op) {
  const int size = int(host_of.size());
  const std::vector<int> first = first_ranks(host_of);
  std::vector<Request> reqs;
  for (size_t t = 0; t < counts.size(); ++t) {
    reqs.push_back(request("t" + std::to_string(t), counts[t], op));
    reqs.back().prescale = 2.0;
    reqs.back().postscale = 0.5;
  }
  std::vector<SimRank> ranks(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    SimRank& sr = ranks[size_t(r)];
    sr.grid = host_grid(first, r);
    REQUIRE(sr.grid.usable());
    const HostPlace place{int(std::find(sr.grid.local.begin(), sr.grid.local.end(), r) - sr.grid.local.begin()),
                          int(sr.grid.local.size())};
    auto plan = plan_nccl(allreduce(counts.size()), reqs, r, size, &place);
    REQUIRE(plan.is_ok());
    sr.plan = plan.value();
    sr.fusion.assign(size_t(sr.plan.fusion_bytes / 8), -1e9);  // padding reduced, never read back
    for (int64_t n : counts) {
      sr.in.emplace_back(size_t(n));
      sr.out.emplace_back(size_t(n), 0.0);
      for (int64_t i = 0; i < n; ++i) sr.in.back()[size_t(i)] = double(i % 7 + r);
    }
  }
  for (size_t k = 0; k < ranks[0].plan.steps.size(); ++k) {
    const StepKind kind = ranks[0].plan.steps[k].kind;
    if (kind == StepKind::kPack || kind == StepKind::kUnpack) {
      for (SimRank& r : ranks) run_copy(r, r.plan.steps[k]);
    } else {
      run_step(ranks, k);
    }
  }
  int64_t wrong = 0;
  for (const SimRank& r : ranks)
    for (size_t t = 0; t < counts.size(); ++t)
      for (int64_t i = 0; i < counts[t]; ++i) {
        const double sum = 2.0 * double(size * (i % 7) + size * (size - 1) / 2);
        const double want = sum * 0.5 / (op == ReduceOp::kAverage ? size : 1);
        wrong += r.out[t][size_t(i)] != want;
      }
  return wrong;
}

}  // namespace

TEST_CASE("Hierarchical NCCL allreduce: pack, host ReduceScatter, shard AllReduce across hosts, host AllGather",
          "[host][nccl_plan][hierarchical]") {
  std::vector<Request> reqs = {request("a", 3, ReduceOp::kAverage), request("b", 0, ReduceOp::kAverage),
                               request("c", 5, ReduceOp::kAverage)};
  for (auto& r : reqs) r.prescale = 0.25;
  HostPlace two{1, 2};  // 10 packed float64, 5 per shard, aligned to 6; this rank's shard at byte 48
  auto plan = plan_nccl(allreduce(3), reqs, 1, 4, &two);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().fusion_bytes == 96);
  CHECK(described(plan.value()) ==
        Strings{"Pack(3 tensors, x0.25/1)", "ReduceScatter(fusion -> fusion+48, 6 x float64, sum) on the host",
                "AllReduce(fusion+48 -> fusion+48, 6 x float64, sum) across hosts",
                "AllGather(fusion+48 -> fusion, 6 x float64) on the host", "Unpack(3 tensors, x1/4)"});
  HostPlace three{2, 3};  // 10 packed, 4 per shard: 2 elements of padding reduced, never read
  plan = plan_nccl(allreduce(3), reqs, 5, 6, &three);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().fusion_bytes == 96);
  CHECK(plan.value().steps[1].dst.offset == 64);
  // One large tensor, which would be reduced where it lies, is packed too.
  plan = plan_nccl(allreduce(1), {request("big", kNoCopyMinBytes / 8)}, 0, 4, &two);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().steps.front().kind == StepKind::kPack);
  // Without a hierarchy the plan is the usual one (one AllReduce on the set's communicator).
  plan = plan_nccl(allreduce(3), reqs, 1, 4);
  REQUIRE(plan.is_ok());
  for (const auto& s : plan.value().steps) CHECK(s.comm == CommScope::kSet);
}

TEST_CASE("Hierarchical NCCL allreduce: every member of each communicator issues the same calls",
          "[host][nccl_plan][hierarchical]") {
  const std::vector<Request> reqs = {request("a", 7), request("b", 1000)};
  for (int per_host : {2, 3, 4}) {
    Strings first;
    for (int place = 0; place < per_host; ++place) {
      const HostPlace p{place, per_host};
      auto plan = plan_nccl(allreduce(2), reqs, place, 2 * per_host, &p);
      REQUIRE(plan.is_ok());
      Strings calls;
      for (PlanStep s : plan.value().steps) {
        if (s.kind == StepKind::kPack || s.kind == StepKind::kUnpack) continue;
        s.src = s.dst = BufferRef{};  // where the shard lies differs; the call may not
        calls.push_back(describe_step(s, plan.value().dtype));
      }
      if (place == 0) first = calls;
      CHECK(calls == first);
    }
  }
}

TEST_CASE("Hierarchical NCCL allreduce, simulated on the host: the allreduce on every rank",
          "[host][nccl_plan][hierarchical]") {
  const std::vector<std::vector<int>> layouts = {{0, 0, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 1, 1, 1},
                                                 {0, 0, 1, 1, 2, 2}, {0, 1, 1, 0, 2, 2}};
  for (const auto& layout : layouts) {
    for (const auto& counts : std::vector<std::vector<int64_t>>{{1}, {3, 0, 5}, {7, 1000, 13}}) {
      INFO(layout.size() << " ranks, " << counts.size() << " tensors, first " << counts[0]);
      CHECK(simulate(layout, counts, ReduceOp::kSum) == 0);
      CHECK(simulate(layout, counts, ReduceOp::kAverage) == 0);
    }
  }
}
