// A fused allreduce gives the same bits on every rank whatever the memory
// layout of each rank's tensors: back to back in one buffer and reduced in
// place on some ranks, separate buffers (in place or out of place) on the
// others. The suite runs under every route (auto, ring, shm, mpi), so each
// route meets every scaling here: Average, prescale, postscale.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "typed_values.h"

using namespace chorus;
using chorus::test::load;
using chorus::test::store;

namespace {

enum class Layout { kFlatInPlace, kSeparateInPlace, kSeparateOutOfPlace };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kFlatInPlace: return "flat, in place";
    case Layout::kSeparateInPlace: return "separate, in place";
    case Layout::kSeparateOutOfPlace: return "separate, out of place";
  }
  return "?";
}

struct Case {
  const char* what;
  DataType dtype;
  ReduceOp op;
  double prescale, postscale;
};

// Small integers (negative ones too): every sum is exact in every dtype here.
double value(int rank, size_t tensor, int64_t i) { return double(i % 7) + rank + double(tensor) - 3; }

double expected(const Case& c, int size, size_t tensor, int64_t i) {
  double sum = 0;
  for (int r = 0; r < size; ++r) sum += value(r, tensor, i) * c.prescale;
  sum *= c.postscale;
  if (c.op != ReduceOp::kAverage) return sum;
  if (is_floating(c.dtype)) return sum / size;
  return double(int64_t(sum) / size);  // integer Average truncates toward zero
}

// Each rank's results, gathered: every rank must hold the same bytes.
void require_same_bytes_everywhere(const std::vector<char>& mine, const std::string& name) {
  std::vector<char> copy = mine;
  auto view = std::make_shared<HostTensorView>(copy.data(), DataType::kUInt8,
                                               TensorShape{static_cast<int64_t>(copy.size())});
  Handle h = allgather_async(name, view);
  h.wait(std::chrono::seconds(60));
  const char* all = static_cast<const char*>(h.output()->data());
  for (int r = 0; r < chorus::size(); ++r) {
    INFO("rank " << r << "'s result differs from rank " << chorus::rank() << "'s");
    REQUIRE(std::memcmp(all + r * mine.size(), mine.data(), mine.size()) == 0);
  }
}

void run(const Case& c, int round) {
  const int rank = chorus::rank(), size = chorus::size();
  const Layout layout = static_cast<Layout>((rank + round) % 3);
  INFO(c.what << " on rank " << rank << ": " << layout_name(layout));
  const std::vector<int64_t> counts{1000, 4099, 1, 30011};
  const int64_t esize = dtype_size(c.dtype);
  int64_t total = 0;
  for (int64_t n : counts) total += n;

  std::vector<char> flat(static_cast<size_t>(total * esize));
  std::vector<std::vector<char>> inputs, outputs;
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Tensor>> ins, outs;
  int64_t offset = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const int64_t n = counts[t];
    char* in = nullptr;
    if (layout == Layout::kFlatInPlace) {
      in = flat.data() + offset * esize;
    } else {
      inputs.emplace_back(static_cast<size_t>(n * esize));
      in = inputs.back().data();
    }
    for (int64_t i = 0; i < n; ++i) store(in, i, c.dtype, value(rank, t, i));
    ins.push_back(std::make_shared<HostTensorView>(in, c.dtype, TensorShape{n}));
    if (layout == Layout::kSeparateOutOfPlace) {
      outputs.emplace_back(static_cast<size_t>(n * esize));
      outs.push_back(std::make_shared<HostTensorView>(outputs.back().data(), c.dtype, TensorShape{n}));
    } else {
      outs.push_back(ins.back());
    }
    names.push_back(std::string("mixed.") + c.what + "." + std::to_string(round) + "." + std::to_string(t));
    offset += n;
  }
  AllreduceOptions options;
  options.op = c.op;
  options.prescale_factor = c.prescale;
  options.postscale_factor = c.postscale;
  const RuntimeStats before = runtime().stats();
  for (auto& h : grouped_allreduce_async(names, ins, outs, options)) h.wait(std::chrono::seconds(60));
  const RuntimeStats after = runtime().stats();
  if (size > 1) REQUIRE(after.fused_allreduce_ops > before.fused_allreduce_ops);
  // The flat layout really took the in-place path this test is about.
  if (size > 1 && layout == Layout::kFlatInPlace) {
    REQUIRE(after.in_place_fused_allreduce_ops > before.in_place_fused_allreduce_ops);
  }

  std::vector<char> results;
  int64_t wrong = 0;
  std::string first_bad;
  const double tol = chorus::test::tolerance(c.dtype);
  for (size_t t = 0; t < counts.size(); ++t) {
    const char* out = static_cast<const char*>(outs[t]->data());
    results.insert(results.end(), out, out + counts[t] * esize);
    for (int64_t i = 0; i < counts[t]; ++i) {
      const double want = expected(c, size, t, i), got = load(out, i, c.dtype);
      const bool ok = tol == 0 ? got == want : std::abs(got - want) <= std::abs(want) * tol;
      if (!ok && wrong++ == 0) first_bad = "tensor " + std::to_string(t) + " element " + std::to_string(i) +
                                           ": got " + std::to_string(got) + ", want " + std::to_string(want);
    }
    if (layout == Layout::kSeparateOutOfPlace) {  // the input is left alone
      for (int64_t i = 0; i < counts[t]; ++i) wrong += load(ins[t]->data(), i, c.dtype) != value(rank, t, i);
    }
  }
  INFO(first_bad);
  REQUIRE(wrong == 0);
  require_same_bytes_everywhere(results, std::string("mixed.check.") + c.what + "." + std::to_string(round));
}

}  // namespace

TEST_CASE("A fused allreduce gives the same bits on every rank whatever each rank's layout",
          "[mpi][allreduce][fusion][layout]") {
  const Case cases[] = {
      {"float32 average", DataType::kFloat32, ReduceOp::kAverage, 1.0, 1.0},
      {"float64 sum pre 0.5 post 3", DataType::kFloat64, ReduceOp::kSum, 0.5, 3.0},
      {"float32 sum post 0.25", DataType::kFloat32, ReduceOp::kSum, 1.0, 0.25},
      {"float32 average pre 2", DataType::kFloat32, ReduceOp::kAverage, 2.0, 1.0},
      {"bfloat16 average", DataType::kBFloat16, ReduceOp::kAverage, 1.0, 1.0},
      {"int32 average", DataType::kInt32, ReduceOp::kAverage, 1.0, 1.0},
      {"int64 average post 2", DataType::kInt64, ReduceOp::kAverage, 1.0, 2.0},
  };
  // Three rounds: each rank takes each layout once.
  for (int round = 0; round < 3; ++round) {
    for (const Case& c : cases) run(c, round);
  }
}

TEST_CASE("Integer Average is exact past 2^53 and truncates toward zero", "[mpi][allreduce]") {
  const int rank = chorus::rank(), size = chorus::size();
  const int64_t n = 64;
  const int64_t big = int64_t{1} << 60;  // 4 ranks' sum still fits an int64
  auto v = [&](int r, int64_t i) { return (i % 2 ? 1 : -1) * (big + 7 * r + i); };
  std::vector<int64_t> data(n), fused(n);
  for (int64_t i = 0; i < n; ++i) data[i] = fused[i] = v(rank, i);
  auto one = std::make_shared<HostTensorView>(data.data(), DataType::kInt64, TensorShape{n});
  allreduce_async("int64.average.big", one, one).wait(std::chrono::seconds(60));
  // The same through a fused pair.
  std::vector<int64_t> other(3, rank);
  auto a = std::make_shared<HostTensorView>(fused.data(), DataType::kInt64, TensorShape{n});
  auto b = std::make_shared<HostTensorView>(other.data(), DataType::kInt64, TensorShape{3});
  for (auto& h : grouped_allreduce_async({"int64.average.big.a", "int64.average.big.b"}, {a, b}, {}, {})) {
    h.wait(std::chrono::seconds(60));
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < size; ++r) sum += v(r, i);
    INFO("element " << i);
    REQUIRE(data[i] == sum / size);
    REQUIRE(fused[i] == sum / size);
  }
}
