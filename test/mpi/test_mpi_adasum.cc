// Adasum under the launcher (2, 3 and 4 ranks: the fold of rank 2 into
// rank 0 at 3): several tensors of float32 and float64 fused into one call,
// against the direct single-process implementation of the same tree, and
// the same bits on every rank.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../unit/adasum_reference.h"
#include "chorus/chorus.h"
#include "api/runtime_access.h"

using namespace chorus;
using namespace chorus::test;

namespace {

template <class T>
void check_adasum(DataType dt, double tolerance) {
  const int rank = chorus::rank(), size = chorus::size();
  const std::vector<int64_t> counts = {3, 1000, 1, 70000, 257};  // one past a MiB of float32 in all
  const std::vector<AdasumVector> everyone = adasum_inputs(size, counts);
  const AdasumVector want = adasum_reference(everyone);
  std::vector<std::vector<T>> data(counts.size());
  std::vector<Handle> handles;
  AllreduceOptions adasum;
  adasum.op = ReduceOp::kAdasum;
  const int64_t calls_before = detail::RuntimeAccess::stats(runtime()).adasum_allreduce_ops;
  for (size_t t = 0; t < counts.size(); ++t) {  // a burst: fused by the coordinator
    const auto& mine = everyone[static_cast<size_t>(rank)][t];
    data[t].assign(mine.begin(), mine.end());
    auto view = std::make_shared<HostTensorView>(data[t].data(), dt, TensorShape{counts[t]});
    handles.push_back(allreduce_async(std::string("adasum.") + dtype_name(dt) + "." + std::to_string(t), view, view,
                                      adasum));
  }
  for (Handle& h : handles) h.wait(std::chrono::seconds(60));
  const int64_t calls = detail::RuntimeAccess::stats(runtime()).adasum_allreduce_ops - calls_before;
  REQUIRE(calls >= 1);
  REQUIRE(calls < static_cast<int64_t>(counts.size()) + 1);
  for (size_t t = 0; t < counts.size(); ++t) {
    INFO("tensor " << t);
    const double scale = std::max(1.0, max_abs(want[t]));
    int64_t wrong = 0;
    for (size_t i = 0; i < want[t].size(); ++i) wrong += std::abs(double(data[t][i]) - want[t][i]) > tolerance * scale;
    REQUIRE(wrong == 0);
    // Rank 0's bits, broadcast, are this rank's bits.
    std::vector<T> root = data[t];
    auto rv = std::make_shared<HostTensorView>(root.data(), dt, TensorShape{counts[t]});
    broadcast_async(std::string("adasum.bits.") + dtype_name(dt) + "." + std::to_string(t), rv, 0).wait();
    REQUIRE(std::memcmp(root.data(), data[t].data(), root.size() * sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("Adasum of fused float32 and float64 tensors matches the direct tree", "[mpi][adasum]") {
  check_adasum<float>(DataType::kFloat32, 1e-5);
  check_adasum<double>(DataType::kFloat64, 1e-12);
}
