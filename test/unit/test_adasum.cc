// Adasum: the pairwise formula on hand-computed cases, the tree on
// in-process links (1..8 ranks, powers of two and not) against a direct
// single-process implementation, and the whole runtime (fused tensors,
// half types, scaling, errors) on in-process ranks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "adasum_reference.h"
#include "chorus/error.h"
#include "comm/loopback/in_process_links.h"
#include "common/half.h"
#include "dataplane/algorithms/adasum_allreduce.h"
#include "loopback_job.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;

namespace {

const std::vector<int64_t> kCounts = {7, 0, 1, 100, 33, 1000};  // several tensors, one empty

// Runs the tree on `size` threads; returns every rank's buffer (as double).
template <class T>
std::vector<std::vector<double>> run_tree(int size, const std::vector<int64_t>& counts) {
  const auto all = adasum_inputs(size, counts);
  auto net = make_in_process_network(size);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  const DataType dt = sizeof(T) == 4 ? DataType::kFloat32 : DataType::kFloat64;
  return on_thread_ranks<std::vector<double>>(size, [&](int r) {
    auto link = make_in_process_link(net, r);
    std::vector<T> buf;
    for (const auto& t : all[static_cast<size_t>(r)]) buf.insert(buf.end(), t.begin(), t.end());
    std::vector<char> scratch(static_cast<size_t>(adasum_scratch_bytes(total, dt)));
    Status s = adasum_allreduce(*link, buf.data(), counts, dt, scratch.data());
    if (!s.is_ok()) throw std::runtime_error(s.message());
    return std::vector<double>(buf.begin(), buf.end());
  });
}

// Wrong elements of `got` (all tensors back to back) against the reference.
int64_t wrong_against_reference(const std::vector<double>& got, const AdasumVector& want, double tolerance) {
  int64_t wrong = 0, at = 0;
  for (const auto& t : want) {
    const double scale = std::max(1.0, max_abs(t));
    for (double w : t) wrong += std::abs(got[static_cast<size_t>(at++)] - w) > tolerance * scale;
  }
  return wrong + (at != static_cast<int64_t>(got.size()));
}

std::shared_ptr<HostTensorView> view(void* data, DataType dt, int64_t n) {
  return std::make_shared<HostTensorView>(data, dt, TensorShape{n});
}

}  // namespace

TEST_CASE("Adasum's pairwise combination on hand-computed vectors", "[adasum]") {
  std::vector<float> a{1, 0}, b{0, 1};  // orthogonal: the sum
  adasum_combine(a.data(), b.data(), {2}, DataType::kFloat32);
  REQUIRE(a == std::vector<float>{1, 1});
  std::vector<double> c{1, 2}, d{1, 2};  // equal: the average
  adasum_combine(c.data(), d.data(), {2}, DataType::kFloat64);
  REQUIRE(c == std::vector<double>{1, 2});
  std::vector<double> e{2, 0}, f{-2, 0};  // opposite: each weighs 1.5, they cancel
  adasum_combine(e.data(), f.data(), {2}, DataType::kFloat64);
  REQUIRE(e == std::vector<double>{0, 0});
  std::vector<double> g{0, 0}, h{3, 4};  // a zero vector keeps coefficient 1
  adasum_combine(g.data(), h.data(), {2}, DataType::kFloat64);
  REQUIRE(g == std::vector<double>{3, 4});
  // Two tensors in one buffer: each has its own dot products (equal, then orthogonal).
  std::vector<double> x{1, 2, 1, 0}, y{1, 2, 0, 1};
  adasum_combine(x.data(), y.data(), {2, 2}, DataType::kFloat64);
  REQUIRE(x == std::vector<double>{1, 2, 1, 1});
}

TEST_CASE("Adasum's tree matches the direct implementation at 1..8 ranks", "[adasum]") {
  for (int size = 1; size <= 8; ++size) {
    INFO("ranks " << size);
    const AdasumVector want = adasum_reference(adasum_inputs(size, kCounts));
    const auto got32 = run_tree<float>(size, kCounts);
    const auto got64 = run_tree<double>(size, kCounts);
    for (int r = 0; r < size; ++r) {
      INFO("rank " << r);
      REQUIRE(wrong_against_reference(got32[static_cast<size_t>(r)], want, 1e-5) == 0);
      REQUIRE(wrong_against_reference(got64[static_cast<size_t>(r)], want, 1e-12) == 0);
      REQUIRE(got32[static_cast<size_t>(r)] == got32[0]);  // the same bits everywhere
      REQUIRE(got64[static_cast<size_t>(r)] == got64[0]);
    }
  }
}

TEST_CASE("Adasum's tree with fewer elements than ranks and one tensor", "[adasum]") {
  for (int size : {2, 3, 4, 5, 8}) {
    for (int64_t n : {1, 3, 5}) {
      INFO("ranks " << size << ", elements " << n);
      const AdasumVector want = adasum_reference(adasum_inputs(size, {n}));
      const auto got = run_tree<double>(size, {n});
      for (const auto& g : got) REQUIRE(wrong_against_reference(g, want, 1e-12) == 0);
    }
  }
}

TEST_CASE("Allreduce with op Adasum through the runtime: fused tensors, scaling, half types", "[adasum][runtime]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("ranks " << size);
    const std::vector<int64_t> counts = {5, 64, 17};
    const AdasumVector want = adasum_reference(adasum_inputs(size, counts));
    run_ranks(size, [&](Runtime& rt, int rank) {
      const auto mine = adasum_inputs(size, counts)[static_cast<size_t>(rank)];
      std::vector<std::vector<float>> f32(counts.size());
      std::vector<std::vector<uint16_t>> f16(counts.size());
      std::vector<std::shared_ptr<Tensor>> t32, t16;
      std::vector<std::string> n32, n16;
      for (size_t t = 0; t < counts.size(); ++t) {
        for (double x : mine[t]) {
          f32[t].push_back(static_cast<float>(x));
          f16[t].push_back(float_to_fp16(static_cast<float>(x)));
        }
        t32.push_back(view(f32[t].data(), DataType::kFloat32, counts[t]));
        t16.push_back(view(f16[t].data(), DataType::kFloat16, counts[t]));
        n32.push_back("w32." + std::to_string(t));
        n16.push_back("w16." + std::to_string(t));
      }
      AllreduceOptions adasum;
      adasum.op = ReduceOp::kAdasum;
      adasum.prescale_factor = 2.0;  // Adasum(2a, 2b) = 2 Adasum(a, b): the scales cancel
      adasum.postscale_factor = 0.5;
      for (auto& h : rt.grouped_allreduce_async(n32, t32, {}, adasum)) h.wait();
      AllreduceOptions plain;
      plain.op = ReduceOp::kAdasum;
      for (auto& h : rt.grouped_allreduce_async(n16, t16, {}, plain)) h.wait();
      for (size_t t = 0; t < counts.size(); ++t) {
        const double scale = std::max(1.0, max_abs(want[t]));
        for (size_t i = 0; i < want[t].size(); ++i) {
          RANK_CHECK(std::abs(f32[t][i] - want[t][i]) <= 1e-5 * scale);
          RANK_CHECK(std::abs(fp16_to_float(f16[t][i]) - want[t][i]) <= 1e-2 * scale);  // inputs rounded to fp16
        }
      }
      const auto stats = RuntimeAccess::stats(rt);
      RANK_CHECK(stats.adasum_allreduce_ops == (size > 1 ? 2 : 0));
      RANK_CHECK(stats.fused_allreduce_ops == 2);  // the dot products stayed per tensor inside one call
    });
  }
}

TEST_CASE("Adasum refuses integer tensors and reducescatter, naming the tensor", "[adasum][runtime]") {
  run_ranks(2, [](Runtime& rt, int) {
    std::vector<int32_t> ints(4, 1);
    AllreduceOptions adasum;
    adasum.op = ReduceOp::kAdasum;
    try {
      rt.allreduce_async("ints", view(ints.data(), DataType::kInt32, 4), view(ints.data(), DataType::kInt32, 4),
                         adasum)
          .wait();
      RANK_CHECK(false);
    } catch (const InvalidArgumentError& e) {
      const std::string m = e.what();
      RANK_CHECK(m.find("'ints'") != std::string::npos);
      RANK_CHECK(m.find("adasum is not defined for int32") != std::string::npos);
    }
    std::vector<float> f(4, 1.0f);
    try {
      rt.reducescatter_async("rs", view(f.data(), DataType::kFloat32, 4), adasum).wait();
      RANK_CHECK(false);
    } catch (const InvalidArgumentError& e) {
      RANK_CHECK(std::string(e.what()).find("adasum is defined for allreduce only") != std::string::npos);
    }
  });
}

TEST_CASE("Adasum inside a process set of 3 of 4 ranks: the fold over the members", "[adasum][process_set]") {
  const std::vector<int64_t> counts = {9, 40};
  const AdasumVector want = adasum_reference(adasum_inputs(3, counts));  // the members, in set order
  run_ranks(4, [&](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({1, 2, 3});
    if (rank == 0) {
      rt.barrier_async().wait(std::chrono::seconds(30));
      return;
    }
    const auto mine = adasum_inputs(3, counts)[static_cast<size_t>(set.rank_of(rank))];
    std::vector<std::vector<double>> data(mine.begin(), mine.end());
    std::vector<std::string> names = {"set.a", "set.b"};
    std::vector<std::shared_ptr<Tensor>> tensors;
    for (size_t t = 0; t < counts.size(); ++t) tensors.push_back(view(data[t].data(), DataType::kFloat64, counts[t]));
    AllreduceOptions adasum;
    adasum.op = ReduceOp::kAdasum;
    for (auto& h : rt.grouped_allreduce_async(names, tensors, {}, adasum, set)) h.wait();
    for (size_t t = 0; t < counts.size(); ++t) {
      for (size_t i = 0; i < want[t].size(); ++i) RANK_CHECK(std::abs(data[t][i] - want[t][i]) <= 1e-12 * max_abs(want[t]));
    }
    rt.barrier_async().wait(std::chrono::seconds(30));
  });
}
