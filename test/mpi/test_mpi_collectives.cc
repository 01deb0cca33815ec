// Allgather and barrier under mpirun: every dtype, first dimensions that
// differ per rank (zero on some), trailing dimensions kept; mismatches fail
// on every rank; a barrier holds every rank until the last one arrives.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <thread>

#include "chorus/chorus.h"
#include "typed_values.h"

using namespace chorus;
using chorus::test::load;
using chorus::test::store;

namespace {

// Rank r contributes `rows(r)` rows; element (row i of rank r, column c).
int64_t rows_of(int rank, int variant) { return variant == 0 ? rank + 1 : (rank % 2 == 0 ? 0 : rank + 2); }
double value(DataType dt, int rank, int64_t row, int64_t col) {
  if (dt == DataType::kBool) return (rank + row + col) % 2;
  return double((rank * 7 + row * 3 + col) % 50);
}

// Waits for `h`; on more than one rank it must fail with an
// InvalidArgumentError whose message contains every piece of `expected`.
void expect_mismatch(const Handle& h, const std::vector<std::string>& expected) {
  if (chorus::size() == 1) {
    h.wait();
    return;
  }
  try {
    h.wait(std::chrono::seconds(60));
    FAIL("expected InvalidArgumentError");
  } catch (const InvalidArgumentError& e) {
    for (const std::string& piece : expected) REQUIRE_THAT(std::string(e.what()), Catch::Contains(piece));
  }
}

}  // namespace

TEST_CASE("Allgather concatenates every rank's rows in rank order, every dtype", "[mpi][allgather]") {
  const int rank = chorus::rank(), size = chorus::size();
  const DataType dtypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64,
                             DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                             DataType::kFloat64, DataType::kBool};
  for (DataType dt : dtypes) {
    for (int variant : {0, 1}) {
      for (const std::vector<int64_t>& trailing : {std::vector<int64_t>{}, std::vector<int64_t>{3},
                                                   std::vector<int64_t>{2, 5}}) {
        int64_t cols = 1;
        for (int64_t d : trailing) cols *= d;
        std::vector<int64_t> dims = {rows_of(rank, variant)};
        dims.insert(dims.end(), trailing.begin(), trailing.end());
        const TensorShape shape{std::vector<int64_t>(dims)};
        std::vector<char> in(static_cast<size_t>(shape.num_elements() * dtype_size(dt)) + 1);
        for (int64_t row = 0; row < dims[0]; ++row) {
          for (int64_t c = 0; c < cols; ++c) store(in.data(), row * cols + c, dt, value(dt, rank, row, c));
        }
        const std::string name = std::string("gather.") + dtype_name(dt) + "." + std::to_string(variant) + "." +
                                 std::to_string(trailing.size());
        INFO(name);
        Handle h = allgather_async(name, std::make_shared<HostTensorView>(in.data(), dt, shape));
        h.wait(std::chrono::seconds(60));
        std::shared_ptr<Tensor> out = h.output();
        REQUIRE(out != nullptr);
        int64_t total_rows = 0;
        for (int r = 0; r < size; ++r) total_rows += rows_of(r, variant);
        REQUIRE(out->shape().dim_size(0) == total_rows);
        REQUIRE(out->shape().dims() == 1 + static_cast<int>(trailing.size()));
        REQUIRE(out->dtype() == dt);
        int64_t wrong = 0, at = 0;
        for (int r = 0; r < size; ++r) {
          for (int64_t row = 0; row < rows_of(r, variant); ++row) {
            for (int64_t c = 0; c < cols; ++c) wrong += load(out->data(), at++, dt) != value(dt, r, row, c);
          }
        }
        REQUIRE(wrong == 0);
      }
    }
  }
}

TEST_CASE("Allgather errors: other trailing dimensions fail on every rank; a scalar is refused", "[mpi][allgather]") {
  const int rank = chorus::rank(), size = chorus::size();
  std::vector<float> v(12, 1.0f);
  const TensorShape shape = rank == size - 1 && size > 1 ? TensorShape{2, 6} : TensorShape{3, 4};
  expect_mismatch(allgather_async("gather.bad", std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, shape)),
                  {"'gather.bad'", "shape after the first dimension differs", "[*, 6] on rank " + std::to_string(size - 1)});
  float scalar = 1;
  REQUIRE_THROWS_WITH(allgather_async("gather.scalar",
                                      std::make_shared<HostTensorView>(&scalar, DataType::kFloat32, TensorShape{}))
                          .wait(std::chrono::seconds(60)),
                      Catch::Contains("scalar"));
}

TEST_CASE("A barrier releases no rank before the last one arrived", "[mpi][barrier]") {
  const int rank = chorus::rank(), size = chorus::size();
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one clock for every process on this host
  for (int round = 0; round < 3; ++round) {
    const int late = round % size;
    if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const double entered = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    barrier();
    const double left = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    // Everybody's entry time, gathered: nobody may leave before the latest entry.
    double e = entered;
    Handle h = allgather_async("barrier.check." + std::to_string(round),
                               std::make_shared<HostTensorView>(&e, DataType::kFloat64, TensorShape{1}));
    h.wait();
    double latest = 0;
    for (int r = 0; r < size; ++r) latest = std::max(latest, static_cast<const double*>(h.output()->data())[r]);
    REQUIRE(left >= latest);
  }
}

namespace {
// An adapter whose allocator fails: out of memory on one rank.
class RefusingContext final : public OpContext {
 public:
  Status allocate_output(const TensorShape& shape, DataType, std::shared_ptr<Tensor>*) override {
    return Status::invalid_argument("no memory for " + shape.to_string() + " (test)");
  }
  Status allocate_zeros(const TensorShape& s, DataType d, std::shared_ptr<Tensor>* out) override {
    return allocate_output(s, d, out);
  }
};
}  // namespace

TEST_CASE("An allocation that fails on one rank fails there only, and nobody hangs", "[mpi][allgather]") {
  const int rank = chorus::rank(), size = chorus::size();
  const int unlucky = size - 1;
  std::vector<int64_t> v(3, rank);
  OpHooks hooks;
  if (rank == unlucky) hooks.context = std::make_shared<RefusingContext>();
  Handle h = runtime().allgather_async(
      "gather.oom", std::make_shared<HostTensorView>(v.data(), DataType::kInt64, TensorShape{3}), hooks);
  if (rank == unlucky) {
    try {
      h.wait(std::chrono::seconds(60));
      FAIL("expected the allocation error");
    } catch (const InvalidArgumentError& e) {
      REQUIRE_THAT(std::string(e.what()), Catch::Contains("'gather.oom'") && Catch::Contains("no memory for [" +
                                                                                            std::to_string(3 * size) + "]"));
    }
  } else {
    h.wait(std::chrono::seconds(60));
    REQUIRE(static_cast<const int64_t*>(h.output()->data())[3 * size - 1] == size - 1);
  }
  barrier();  // everybody still in step
}

TEST_CASE("Reducescatter: rows not divisible by the rank count, every op, exact values", "[mpi][reducescatter]") {
  const int rank = chorus::rank(), size = chorus::size();
  const DataType dtypes[] = {DataType::kInt32, DataType::kInt64, DataType::kFloat16, DataType::kBFloat16,
                             DataType::kFloat32, DataType::kFloat64, DataType::kUInt8, DataType::kInt8, DataType::kInt16};
  for (DataType dt : dtypes) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax}) {
      for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{size}, int64_t{2 * size + 1}, int64_t{7}}) {
        const int64_t cols = 3;
        std::vector<char> in(static_cast<size_t>(rows * cols * dtype_size(dt)) + 1);
        auto v = [&](int r, int64_t i) { return double((i * 5 + r * 3) % 9 + (op == ReduceOp::kAverage ? r : 0)); };
        for (int64_t i = 0; i < rows * cols; ++i) store(in.data(), i, dt, v(rank, i));
        AllreduceOptions o;
        o.op = op;
        const std::string name = std::string("rs.") + dtype_name(dt) + "." + reduce_op_name(op) + "." + std::to_string(rows);
        INFO(name);
        Handle h = reducescatter_async(name, std::make_shared<HostTensorView>(in.data(), dt, TensorShape{rows, cols}), o);
        h.wait(std::chrono::seconds(60));
        auto out = h.output();
        REQUIRE(out != nullptr);
        const int64_t base = rows / size, extra = rows % size;
        const int64_t my_rows = base + (rank < extra ? 1 : 0);
        const int64_t first_row = rank * base + std::min<int64_t>(rank, extra);
        REQUIRE(out->shape() == TensorShape({my_rows, cols}));
        int64_t wrong = 0;
        for (int64_t i = 0; i < my_rows * cols; ++i) {
          const int64_t gi = first_row * cols + i;
          double want = v(0, gi);
          for (int r = 1; r < size; ++r) {
            const double x = v(r, gi);
            if (op == ReduceOp::kSum || op == ReduceOp::kAverage) want += x;
            if (op == ReduceOp::kMin) want = std::min(want, x);
            if (op == ReduceOp::kMax) want = std::max(want, x);
          }
          if (op == ReduceOp::kAverage) want = is_floating(dt) ? want / size : std::trunc(want / size);
          const double got = load(out->data(), i, dt);
          const bool ok = op == ReduceOp::kAverage && is_floating(dt)
                              ? std::abs(got - want) <= std::abs(want) * chorus::test::tolerance(dt) + 1e-12
                              : got == want;
          wrong += !ok;
        }
        REQUIRE(wrong == 0);
      }
    }
  }
}

TEST_CASE("Reducescatter errors: shapes that differ fail on every rank; a scalar is refused", "[mpi][reducescatter]") {
  const int rank = chorus::rank(), size = chorus::size();
  std::vector<float> v(12, 1.0f);
  const TensorShape shape = rank == size - 1 && size > 1 ? TensorShape{4, 3} : TensorShape{3, 4};
  expect_mismatch(reducescatter_async("rs.bad", std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, shape)),
                  {"'rs.bad'", "shape differs", "[4, 3] on rank " + std::to_string(size - 1)});
  float scalar = 1;
  REQUIRE_THROWS_WITH(reducescatter_async("rs.scalar",
                                          std::make_shared<HostTensorView>(&scalar, DataType::kFloat32, TensorShape{}))
                          .wait(std::chrono::seconds(60)),
                      Catch::Contains("scalar"));
}

TEST_CASE("Alltoall with explicit and equal splits; received splits returned", "[mpi][alltoall]") {
  const int rank = chorus::rank(), size = chorus::size();
  auto split = [](int from, int to) { return int64_t((from + to) % 3); };
  for (DataType dt : {DataType::kUInt8, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kFloat16,
                      DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBool}) {
    // Explicit: rank i sends (i + j) % 3 rows to rank j, plus 1 spare row it keeps.
    std::vector<int64_t> splits;
    int64_t rows = 1;
    for (int j = 0; j < size; ++j) {
      splits.push_back(split(rank, j));
      rows += split(rank, j);
    }
    std::vector<char> in(static_cast<size_t>(rows * 2 * dtype_size(dt)) + 1);
    auto value = [dt](int r, int64_t i) { return dt == DataType::kBool ? double((r + i) % 2) : double((r * 37 + i) % 100); };
    for (int64_t i = 0; i < rows * 2; ++i) store(in.data(), i, dt, value(rank, i));
    const std::string name = std::string("a2a.") + dtype_name(dt);
    INFO(name);
    Handle h = alltoall_async(name, std::make_shared<HostTensorView>(in.data(), dt, TensorShape{rows, 2}), splits);
    h.wait(std::chrono::seconds(60));
    const std::vector<int64_t> got = h.received_splits();
    REQUIRE(got.size() == static_cast<size_t>(size));
    int64_t at = 0, wrong = 0;
    for (int s = 0; s < size; ++s) {
      REQUIRE(got[static_cast<size_t>(s)] == split(s, rank));
      int64_t first = 0;  // where s's block for me starts in s's input
      for (int k = 0; k < rank; ++k) first += split(s, k);
      for (int64_t i = 0; i < split(s, rank) * 2; ++i) {
        wrong += load(h.output()->data(), at++, dt) != value(s, first * 2 + i);
      }
    }
    REQUIRE(h.output()->shape().dim_size(0) == at / 2);
    REQUIRE(wrong == 0);
  }
  // Equal splits by default.
  std::vector<int64_t> v(static_cast<size_t>(2 * size));
  for (int64_t i = 0; i < 2 * size; ++i) v[static_cast<size_t>(i)] = rank * 100 + i;
  Handle h = alltoall_async("a2a.equal", std::make_shared<HostTensorView>(v.data(), DataType::kInt64, TensorShape{2 * size}));
  h.wait();
  const int64_t* out = static_cast<const int64_t*>(h.output()->data());
  for (int s = 0; s < size; ++s) {
    REQUIRE(out[2 * s] == s * 100 + 2 * rank);
    REQUIRE(out[2 * s + 1] == s * 100 + 2 * rank + 1);
  }
}

TEST_CASE("Alltoall errors: bad splits are refused (at the wait); other trailing dimensions fail everywhere", "[mpi][alltoall]") {
  const int rank = chorus::rank(), size = chorus::size();
  std::vector<float> v(12, 1.0f);
  auto t = std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{6, 2});
  std::vector<int64_t> negative(static_cast<size_t>(size), 0);
  negative[0] = -1;
  REQUIRE_THROWS_WITH(alltoall_async("a2a.neg", t, negative).wait(std::chrono::seconds(60)), Catch::Contains("split 0 is negative"));
  REQUIRE_THROWS_WITH(alltoall_async("a2a.count", t, std::vector<int64_t>(static_cast<size_t>(size) + 1, 0)).wait(std::chrono::seconds(60)),
                      Catch::Contains("splits given for " + std::to_string(size) + " ranks"));
  std::vector<int64_t> too_many(static_cast<size_t>(size), 7);
  REQUIRE_THROWS_WITH(alltoall_async("a2a.sum", t, too_many).wait(std::chrono::seconds(60)), Catch::Contains("past the first dimension 6"));
  if (6 % size != 0) REQUIRE_THROWS_WITH(alltoall_async("a2a.div", t).wait(std::chrono::seconds(60)), Catch::Contains("equal splits"));
  const TensorShape shape = rank == size - 1 && size > 1 ? TensorShape{4, 3} : TensorShape{6, 2};
  std::vector<int64_t> zeros(static_cast<size_t>(size), 0);
  expect_mismatch(alltoall_async("a2a.bad", std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, shape), zeros),
                  {"'a2a.bad'", "shape after the first dimension differs", "[*, 3] on rank " + std::to_string(size - 1)});
}
