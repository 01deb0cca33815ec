// Allreduce under mpirun: every dtype x op x shape against exact expected
// values, in and out of place, scale factors, fusion, topology.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>
#include <sstream>

#include "dataplane/route_choice.h"
#include "kernels/reduce_kernels.h"
#include "api/runtime_access.h"
#include "chorus/chorus.h"
#include "typed_values.h"

using namespace chorus;
using chorus::test::load;
using chorus::test::store;

namespace {

// Rank r's element i, chosen so every reduction is exact in every dtype
// (small integers; products of 1s and 2s) for up to 4 ranks.
double input_value(ReduceOp op, DataType dt, int rank, int64_t i) {
  if (dt == DataType::kBool) return ((i + rank) % 3) != 0 ? 1 : 0;
  switch (op) {
    case ReduceOp::kProduct: return double((i + rank) % 2 + 1);
    case ReduceOp::kMin:
    case ReduceOp::kMax: return double((i * 7 + rank * 3) % 11);
    default: return double(i % 5 + rank + 1);
  }
}

double expected_value(ReduceOp op, DataType dt, int size, int64_t i) {
  double acc = input_value(op, dt, 0, i);
  for (int r = 1; r < size; ++r) {
    const double v = input_value(op, dt, r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::kAverage) acc = is_floating(dt) ? acc / size : std::trunc(acc / size);
  return acc;
}

std::string describe(DataType dt, ReduceOp op, const TensorShape& shape, bool in_place) {
  std::ostringstream out;
  out << dtype_name(dt) << " " << reduce_op_name(op) << " " << shape.to_string()
      << (in_place ? " in place" : " out of place");
  return out.str();
}

// Returns the number of wrong elements (and the first one in *first_bad).
int64_t run_case(DataType dt, ReduceOp op, const TensorShape& shape, bool in_place, std::string* first_bad) {
  const int rank = chorus::rank(), size = chorus::size();
  const int64_t n = shape.num_elements();
  std::vector<char> in(static_cast<size_t>(n * dtype_size(dt))), out(in.size());
  for (int64_t i = 0; i < n; ++i) store(in.data(), i, dt, input_value(op, dt, rank, i));
  auto input = std::make_shared<HostTensorView>(in.data(), dt, shape);
  auto output = in_place ? input : std::make_shared<HostTensorView>(out.data(), dt, shape);
  AllreduceOptions options;
  options.op = op;
  allreduce_async(describe(dt, op, shape, in_place), input, output, options).wait(std::chrono::seconds(60));
  const char* result = in_place ? in.data() : out.data();
  const double tol = chorus::test::tolerance(dt);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = expected_value(op, dt, size, i), got = load(result, i, dt);
    const bool exact_needed = op != ReduceOp::kAverage || !is_floating(dt);
    const bool ok = exact_needed ? got == want : std::abs(got - want) <= std::abs(want) * tol;
    if (!ok && wrong++ == 0) {
      std::ostringstream m;
      m << "element " << i << ": got " << got << ", want " << want;
      *first_bad = m.str();
    }
  }
  return wrong;
}

const DataType kAllDtypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64,
                               DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64, DataType::kBool};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

}  // namespace

TEST_CASE("Topology matches what mpirun says", "[mpi][topology]") {
  const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  REQUIRE(chorus::size() >= 1);
  REQUIRE(chorus::rank() < chorus::size());
  if (local_rank && local_size) {
    REQUIRE(chorus::local_rank() == std::atoi(local_rank));
    REQUIRE(chorus::local_size() == std::atoi(local_size));
  }
  if (chorus::local_size() == chorus::size()) {  // one host
    REQUIRE(chorus::cross_size() == 1);
    REQUIRE(chorus::cross_rank() == 0);
    REQUIRE(chorus::is_homogeneous());
  }
  // Horovod's mpi_enabled() / gloo_enabled(): what carries this job.
  const Transport transport = runtime().transport();
  REQUIRE((transport == Transport::kMpi || transport == Transport::kTcp));
  CHECK(chorus::mpi_enabled() == (transport == Transport::kMpi));
  CHECK(chorus::tcp_enabled() == (transport == Transport::kTcp));
  const char* chosen = std::getenv("CHORUS_TRANSPORT");
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr && (chosen == nullptr || std::string(chosen) == "mpi")) {
    CHECK(chorus::mpi_enabled());
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) CHECK(chorus::tcp_enabled());  // no MPI launcher
  if (chorus::mpi_enabled()) CHECK(chorus::mpi_built());
}

TEST_CASE("Every dtype x op x shape reduces to the exact expected values", "[mpi][allreduce]") {
  const TensorShape shapes[] = {TensorShape{0}, TensorShape{1}, TensorShape{17}, TensorShape{17, 17, 17},
                                TensorShape{1 << 20}};
  for (DataType dt : kAllDtypes) {
    for (ReduceOp op : kAllOps) {
      if (!detail::reduction_supported(dt, op)) continue;
      for (const TensorShape& shape : shapes) {
        for (bool in_place : {false, true}) {
          if (in_place && shape.num_elements() > 17 * 17 * 17) continue;  // the big case once
          std::string first_bad;
          INFO(describe(dt, op, shape, in_place));
          const int64_t wrong = run_case(dt, op, shape, in_place, &first_bad);
          INFO(first_bad);
          REQUIRE(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("Unsupported op/dtype pairs are refused, failing at the wait", "[mpi][allreduce]") {
  std::vector<uint8_t> flags(4, 1);
  auto t = std::make_shared<HostTensorView>(flags.data(), DataType::kBool, TensorShape{4});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  REQUIRE_THROWS_WITH(allreduce_async("bool sum", t, t, sum).wait(std::chrono::seconds(60)), Catch::Contains("not defined for bool"));
}

TEST_CASE("Prescale and postscale multiply around the reduction", "[mpi][allreduce]") {
  const int rank = chorus::rank(), size = chorus::size();
  std::vector<double> v(33);
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(rank + 1) * double(i);
  auto t = std::make_shared<HostTensorView>(v.data(), DataType::kFloat64, TensorShape{33});
  AllreduceOptions options;
  options.op = ReduceOp::kSum;
  options.prescale_factor = 0.5;
  options.postscale_factor = 3.0;
  std::vector<double> out(33, -1.0);  // out of place: the input must stay as it was
  auto to = std::make_shared<HostTensorView>(out.data(), DataType::kFloat64, TensorShape{33});
  allreduce_async("scaled.out", t, to, options).wait();
  allreduce_async("scaled", t, t, options).wait();
  const double rank_sum = size * (size + 1) / 2.0;
  for (size_t i = 0; i < v.size(); ++i) {
    REQUIRE(out[i] == Approx(1.5 * rank_sum * double(i)));
    REQUIRE(v[i] == Approx(1.5 * rank_sum * double(i)));
  }

  std::vector<int32_t> ints(5, 10 + rank);  // Average of ints truncates the mean
  auto ti = std::make_shared<HostTensorView>(ints.data(), DataType::kInt32, TensorShape{5});
  allreduce_async("int average", ti, ti).wait();
  int sum = 0;
  for (int r = 0; r < size; ++r) sum += 10 + r;
  REQUIRE(ints[4] == sum / size);
}

TEST_CASE("200 async 16 KiB tensors are fused into few allreduces", "[mpi][fusion]") {
  const int rank = chorus::rank(), size = chorus::size();
  const int n = 200;
  std::vector<std::vector<float>> bufs(n, std::vector<float>(4096));
  const RuntimeStats before = runtime().stats();
  std::vector<Handle> handles;
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  for (int t = 0; t < n; ++t) {
    std::fill(bufs[t].begin(), bufs[t].end(), float(t + rank));
    auto view = std::make_shared<HostTensorView>(bufs[t].data(), DataType::kFloat32, TensorShape{4096});
    handles.push_back(allreduce_async("storm." + std::to_string(t), view, view, sum));
  }
  for (auto& h : handles) h.wait(std::chrono::seconds(60));
  const RuntimeStats after = runtime().stats();
  for (int t = 0; t < n; ++t) REQUIRE(bufs[t][4095] == float(size * t + size * (size - 1) / 2));
  REQUIRE(after.tensors_allreduced - before.tensors_allreduced == n);
  REQUIRE(after.fused_allreduce_ops > before.fused_allreduce_ops);
  REQUIRE(after.allreduce_ops - before.allreduce_ops < n / 2);
}

TEST_CASE("Grouped allreduce over MPI", "[mpi][group]") {
  const int rank = chorus::rank(), size = chorus::size();
  std::vector<std::vector<int64_t>> bufs(4, std::vector<int64_t>(100, rank));
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Tensor>> ts;
  for (int i = 0; i < 4; ++i) {
    names.push_back("grouped." + std::to_string(i));
    ts.push_back(std::make_shared<HostTensorView>(bufs[i].data(), DataType::kInt64, TensorShape{10, 10}));
  }
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  auto hs = grouped_allreduce_async(names, ts, {}, sum);
  for (auto& h : hs) h.wait();
  for (auto& b : bufs) REQUIRE(b[99] == int64_t(size) * (size - 1) / 2);
}

TEST_CASE("The allreduce algorithm follows CHORUS_ALLREDUCE_ALGO", "[mpi][ring][shm]") {
  const int size = chorus::size();
  std::vector<float> big(1 << 18, 1.0f);  // 1 MiB: the ring under auto's default threshold
  auto t = std::make_shared<HostTensorView>(big.data(), DataType::kFloat32, TensorShape{1 << 18});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  const detail::InternalStats before = detail::RuntimeAccess::stats(runtime());
  allreduce_async("algo.big", t, t, sum).wait();
  const detail::InternalStats after = detail::RuntimeAccess::stats(runtime());
  REQUIRE(big.front() == float(size));
  REQUIRE(big.back() == float(size));
  // Shared memory is there when every rank is on one host (not over TCP
  // with a host id per rank, test/tcp).
  const bool one_host = chorus::local_size() == size;
  // Hierarchical: with the option, on hosts of equal rank counts (as test/tcp plays them).
  const bool hierarchical = runtime().options().hierarchical_allreduce && chorus::local_size() > 1 && !one_host &&
                            size % chorus::local_size() == 0;
  const detail::AllreduceRoute route =
      detail::choose_allreduce_route(runtime().options(), 1 << 20, size, one_host, hierarchical);
  REQUIRE(after.ring_allreduce_ops - before.ring_allreduce_ops == (route == detail::AllreduceRoute::kRing ? 1 : 0));
  REQUIRE(after.hierarchical_allreduce_ops - before.hierarchical_allreduce_ops ==
          (route == detail::AllreduceRoute::kHierarchical ? 1 : 0));
  REQUIRE(after.shm_allreduce_ops - before.shm_allreduce_ops == (detail::on_shared_memory(route) ? 1 : 0));
  // Single copy, once chosen, runs: the ranks may reach each other's memory here.
  REQUIRE(after.shm_single_copy_ops - before.shm_single_copy_ops ==
          (route == detail::AllreduceRoute::kSingleCopy ? 1 : 0));
}

TEST_CASE("Repeated names are negotiated through the response cache", "[mpi][cache]") {
  const int rank = chorus::rank(), size = chorus::size();
  const RuntimeStats before = runtime().stats();
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<float>> bufs(8, std::vector<float>(100));
    std::vector<Handle> hs;
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (int t = 0; t < 8; ++t) {
      std::fill(bufs[t].begin(), bufs[t].end(), float(rank + t));
      auto v = std::make_shared<HostTensorView>(bufs[t].data(), DataType::kFloat32, TensorShape{100});
      hs.push_back(allreduce_async("cached." + std::to_string(t), v, v, sum));
    }
    for (auto& h : hs) h.wait(std::chrono::seconds(60));
    for (int t = 0; t < 8; ++t) REQUIRE(bufs[t][99] == float(size * t + size * (size - 1) / 2));
  }
  const RuntimeStats after = runtime().stats();
  const bool cache_on = runtime().options().cache_capacity > 0;
  // Workers send keys once the names are cached; the coordinator resolves them.
  if (size > 1 && cache_on && runtime().options().cache_capacity >= 8) {
    REQUIRE(after.cache_hits - before.cache_hits > 0);
  }
  if (!cache_on) REQUIRE(after.cache_hits == before.cache_hits);
}

TEST_CASE("Tensors from allocate_shared_host are reduced where they lie across processes", "[mpi][shm][arena]") {
  // Zero-copy exactly when every rank's tensors lie in its arena and the
  // route is shared memory; with rank 0's on the heap the same calls stage.
  const int rank = chorus::rank(), size = chorus::size();
  const AllreduceAlgorithm algo = runtime().options().allreduce_algorithm;
  const bool arenas = size > 1 && chorus::local_size() == size && runtime().options().shm_arena_bytes > 0 &&
                      (algo == AllreduceAlgorithm::kAuto || algo == AllreduceAlgorithm::kSharedMemory);
  for (bool rank0_on_heap : {false, true}) {
    INFO("rank 0 on the heap: " << rank0_on_heap);
    const bool in_arena = !(rank0_on_heap && rank == 0);
    const std::vector<int64_t> counts{1, 4099, 1 << 20, 13, 0};
    std::vector<std::shared_ptr<void>> memory;
    std::vector<std::vector<char>> heap;
    auto buffer = [&](int64_t bytes) -> char* {
      if (in_arena) {
        memory.push_back(runtime().allocate_shared_host(bytes));
        REQUIRE(runtime().in_shared_host(memory.back().get(), bytes) == arenas);
        return static_cast<char*>(memory.back().get());
      }
      heap.emplace_back(static_cast<size_t>(bytes) + 1);
      return heap.back().data();
    };
    // A fused group of float32 sums, in place.
    std::vector<std::string> names;
    std::vector<std::shared_ptr<Tensor>> tensors;
    std::vector<float*> data;
    int64_t total = 0;
    for (size_t t = 0; t < counts.size(); ++t) {
      data.push_back(reinterpret_cast<float*>(buffer(counts[t] * 4)));
      for (int64_t i = 0; i < counts[t]; ++i) data[t][i] = float(rank + 1) * float(i % 1000 + t);
      names.push_back("arena.group." + std::to_string(t));
      tensors.push_back(std::make_shared<HostTensorView>(data[t], DataType::kFloat32, TensorShape{counts[t]}));
      total += counts[t] * 4;
    }
    // An int64 max out of place: the input must be left alone.
    const int64_t n = 77777;
    auto* in = reinterpret_cast<int64_t*>(buffer(n * 8));
    auto* out = reinterpret_cast<int64_t*>(buffer(n * 8));
    for (int64_t i = 0; i < n; ++i) in[i] = (i * 7 + rank * 3) % 11;
    const RuntimeStats before = runtime().stats();
    AllreduceOptions sum, max;
    sum.op = ReduceOp::kSum;
    max.op = ReduceOp::kMax;
    for (auto& h : grouped_allreduce_async(names, tensors, {}, sum)) h.wait(std::chrono::seconds(60));
    allreduce_async("arena.max", std::make_shared<HostTensorView>(in, DataType::kInt64, TensorShape{n}),
                    std::make_shared<HostTensorView>(out, DataType::kInt64, TensorShape{n}), max)
        .wait(std::chrono::seconds(60));
    const RuntimeStats after = runtime().stats();
    int64_t wrong = 0;
    const float ranks_sum = float(size * (size + 1) / 2);
    for (size_t t = 0; t < counts.size(); ++t) {
      for (int64_t i = 0; i < counts[t]; ++i) wrong += data[t][i] != ranks_sum * float(i % 1000 + t);
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t want = 0;
      for (int k = 0; k < size; ++k) want = std::max<int64_t>(want, (i * 7 + k * 3) % 11);
      wrong += out[i] != want;
      wrong += in[i] != (i * 7 + rank * 3) % 11;
    }
    REQUIRE(wrong == 0);
    const bool shm = size > 1 &&
                     detail::on_shared_memory(detail::choose_allreduce_route(runtime().options(), total, size, true)) &&
                     detail::on_shared_memory(detail::choose_allreduce_route(runtime().options(), n * 8, size, true));
    REQUIRE(after.shm_zero_copy_ops - before.shm_zero_copy_ops == (arenas && shm && !rank0_on_heap ? 2 : 0));
  }
}
