// Fused allgathers under mpirun: a burst of allgathers of several dtypes,
// shapes and per-rank first dimensions (zero on some ranks) comes back
// exact, and RuntimeStats shows they travelled in few fused operations.
#include <catch2/catch.hpp>

#include <chrono>

#include "chorus/chorus.h"
#include "typed_values.h"

using namespace chorus;
using chorus::test::load;
using chorus::test::store;

namespace {

int64_t rows_of(int t, int rank) { return (rank + t) % 3; }
int64_t cols_of(int t) { return t % 3 + 1; }
double value(DataType dt, int t, int rank, int64_t i) {
  if (dt == DataType::kBool) return (t + rank + i) % 2;
  return double((t * 5 + rank * 11 + i) % 60);
}

}  // namespace

TEST_CASE("A burst of allgathers is fused and every output is exact", "[mpi][allgather][fusion]") {
  const int rank = chorus::rank(), size = chorus::size();
  const DataType dtypes[] = {DataType::kInt32, DataType::kFloat16, DataType::kFloat64, DataType::kBool};
  const int n = 120;
  auto dtype_of = [&](int t) { return dtypes[t % 4]; };
  std::vector<std::vector<char>> ins(n);
  std::vector<Handle> handles;
  const RuntimeStats before = runtime().stats();
  for (int t = 0; t < n; ++t) {
    const DataType dt = dtype_of(t);
    const TensorShape shape{rows_of(t, rank), cols_of(t)};
    ins[t].resize(static_cast<size_t>(shape.num_elements() * dtype_size(dt)) + 1);
    for (int64_t i = 0; i < shape.num_elements(); ++i) store(ins[t].data(), i, dt, value(dt, t, rank, i));
    handles.push_back(allgather_async("fused.gather." + std::to_string(t),
                                      std::make_shared<HostTensorView>(ins[t].data(), dt, shape)));
  }
  int64_t wrong = 0;
  for (int t = 0; t < n; ++t) {
    handles[t].wait(std::chrono::seconds(60));
    std::shared_ptr<Tensor> out = handles[t].output();
    REQUIRE(out != nullptr);
    int64_t rows = 0;
    for (int r = 0; r < size; ++r) rows += rows_of(t, r);
    REQUIRE(out->shape() == TensorShape({rows, cols_of(t)}));
    int64_t at = 0;
    for (int r = 0; r < size; ++r) {
      for (int64_t i = 0; i < rows_of(t, r) * cols_of(t); ++i) wrong += load(out->data(), at++, dtype_of(t)) != value(dtype_of(t), t, r, i);
    }
  }
  REQUIRE(wrong == 0);
  const RuntimeStats after = runtime().stats();
  REQUIRE(after.allgathers - before.allgathers == n);
  REQUIRE(after.fused_allgather_ops > before.fused_allgather_ops);
  REQUIRE(after.allgather_ops - before.allgather_ops < n / 2);
}
