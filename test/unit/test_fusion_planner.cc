// Packing ready allreduces into fused responses.
#include <catch2/catch.hpp>

#include "fusion/fusion_planner.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
ReadyTensor ready(const std::string& name, int64_t elements, DataType dtype = DataType::kFloat32,
                  ResponseType type = ResponseType::kAllreduce) {
  ReadyTensor t;
  t.request.name = name;
  t.request.dtype = dtype;
  t.request.shape = {elements};
  t.response.type = type;
  t.response.names = {name};
  t.response.total_bytes = elements * dtype_size(dtype);
  return t;
}
std::vector<std::vector<std::string>> names_of(const std::vector<Response>& plan) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : plan) out.push_back(r.names);
  return out;
}
}  // namespace

TEST_CASE("Compatible tensors fuse up to the threshold", "[fusion]") {
  // 40 bytes each; 100-byte threshold holds two.
  auto plan = plan_fusion({ready("a", 10), ready("b", 10), ready("c", 10)}, 100);
  REQUIRE(names_of(plan) == std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}});
  REQUIRE(plan[0].total_bytes == 80);
}

TEST_CASE("A tensor exactly at the threshold fits; one above gets its own op", "[fusion]") {
  auto plan = plan_fusion({ready("a", 25), ready("b", 100), ready("c", 1)}, 100);
  REQUIRE(names_of(plan) == std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c"}});
  plan = plan_fusion({ready("a", 24), ready("c", 1)}, 100);
  REQUIRE(names_of(plan) == std::vector<std::vector<std::string>>{{"a", "c"}});
}

TEST_CASE("Threshold 0 turns fusion off", "[fusion]") {
  auto plan = plan_fusion({ready("a", 1), ready("b", 1)}, 0);
  REQUIRE(plan.size() == 2);
}

TEST_CASE("Different dtypes, ops or scales never share a buffer; look-ahead still fuses", "[fusion]") {
  ReadyTensor scaled = ready("s", 1);
  scaled.request.prescale = 2;
  ReadyTensor maxed = ready("m", 1);
  maxed.request.op = ReduceOp::kMax;
  auto plan = plan_fusion({ready("f1", 1), ready("h1", 1, DataType::kFloat16), ready("f2", 1),
                           ready("h2", 1, DataType::kFloat16), scaled, maxed},
                          1 << 20);
  REQUIRE(names_of(plan) ==
          std::vector<std::vector<std::string>>{{"f1", "f2"}, {"h1", "h2"}, {"s"}, {"m"}});
}

TEST_CASE("Errors and broadcasts pass through in order, unfused", "[fusion]") {
  auto plan = plan_fusion({ready("a", 1), ready("e", 1, DataType::kFloat32, ResponseType::kError),
                           ready("p", 1, DataType::kFloat32, ResponseType::kBroadcast),
                           ready("q", 1, DataType::kFloat32, ResponseType::kBroadcast), ready("b", 1)},
                          1 << 20);
  REQUIRE(names_of(plan) == std::vector<std::vector<std::string>>{{"a", "b"}, {"e"}, {"p"}, {"q"}});
  REQUIRE(plan[1].type == ResponseType::kError);
}

namespace {
// An allgather ready everywhere: `dims` holds each rank's first dimension
// of a tensor with `cols` elements per row.
ReadyTensor gathered(const std::string& name, std::vector<int64_t> dims, int64_t cols,
                     DataType dtype = DataType::kFloat32) {
  ReadyTensor t = ready(name, 0, dtype, ResponseType::kAllgather);
  t.request.type = CollectiveType::kAllgather;
  t.request.shape = {dims.front(), cols};
  t.response.total_bytes = 0;
  for (int64_t d : dims) t.response.total_bytes += d * cols * dtype_size(dtype);
  t.response.first_dims = std::move(dims);
  return t;
}
}  // namespace

TEST_CASE("Allgathers fuse up to the threshold, their first dimensions concatenated per tensor", "[fusion]") {
  // Two ranks; each tensor's output is (1 + 2) rows of 2 floats = 24 bytes.
  auto plan = plan_fusion({gathered("a", {1, 2}, 2), gathered("b", {0, 3}, 1), gathered("c", {1, 2}, 2)}, 48);
  REQUIRE(names_of(plan) == std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}});
  REQUIRE(plan[0].type == ResponseType::kAllgather);
  REQUIRE(plan[0].first_dims == std::vector<int64_t>{1, 2, 0, 3});
  REQUIRE(plan[0].total_bytes == 36);
  REQUIRE(plan[1].first_dims == std::vector<int64_t>{1, 2});
}

TEST_CASE("Allgathers never share a buffer with allreduces or another dtype", "[fusion]") {
  auto plan = plan_fusion({gathered("g1", {1}, 1), ready("r1", 1), gathered("h1", {1}, 1, DataType::kInt8),
                           gathered("g2", {2}, 3), ready("r2", 1), gathered("h2", {0}, 1, DataType::kInt8)},
                          1 << 20);
  REQUIRE(names_of(plan) ==
          std::vector<std::vector<std::string>>{{"g1", "g2"}, {"r1", "r2"}, {"h1", "h2"}});
  REQUIRE(plan[0].first_dims == std::vector<int64_t>{1, 2});
  plan = plan_fusion({gathered("g1", {1}, 1), gathered("g2", {1}, 1)}, 0);
  REQUIRE(plan.size() == 2);  // threshold 0: fusion off
}
