// Which NCCL calls a device response turns into (host only): the exact
// steps for each collective, and across ranks that every rank issues the
// same collective calls and that every send meets its receive.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <tuple>

#include "device/cuda/nccl_plan.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::detail::gpu;

namespace {

Request request(const std::string& name, std::vector<int64_t> shape, DataType dtype = DataType::kFloat32,
                ReduceOp op = ReduceOp::kSum, CollectiveType type = CollectiveType::kAllreduce) {
  Request r;
  r.name = name;
  r.shape = std::move(shape);
  r.dtype = dtype;
  r.op = op;
  r.type = type;
  return r;
}

Response response(ResponseType type, size_t tensors) {
  Response r;
  r.type = type;
  for (size_t i = 0; i < tensors; ++i) r.names.push_back("t" + std::to_string(i));
  return r;
}

std::vector<std::string> steps(const Response& resp, const std::vector<Request>& reqs, int rank, int size) {
  auto plan = plan_nccl(resp, reqs, rank, size);
  REQUIRE(plan.is_ok());
  std::vector<std::string> out;
  for (const auto& s : plan.value().steps) out.push_back(describe_step(s, plan.value().dtype));
  return out;
}

using Strings = std::vector<std::string>;

/// The collective calls alone (what must match on every rank).
Strings collectives(const NcclPlan& plan) {
  Strings out;
  for (const auto& s : plan.steps)
    if (s.kind != StepKind::kScale && s.kind != StepKind::kPack && s.kind != StepKind::kUnpack &&
        s.kind != StepKind::kSend && s.kind != StepKind::kRecv) {
      PlanStep c = s;
      c.src = c.dst = BufferRef{};  // where this rank's data lie may differ; the call may not
      out.push_back(describe_step(c, plan.dtype));
    }
  return out;
}

}  // namespace

TEST_CASE("One tensor: one ncclAllReduce from input to output", "[host][nccl_plan]") {
  const auto s = steps(response(ResponseType::kAllreduce, 1), {request("a", {3, 4})}, 0, 2);
  CHECK(s == Strings{"AllReduce(in0 -> out0, 12 x float32, sum)"});
}

TEST_CASE("Scaling and integer Average: scale into the output, sum there, divide after", "[host][nccl_plan]") {
  Request r = request("a", {10}, DataType::kInt32, ReduceOp::kAverage);
  r.prescale = 2.0;
  r.postscale = 0.5;
  CHECK(steps(response(ResponseType::kAllreduce, 1), {r}, 1, 3) ==
        Strings{"Scale(in0 -> out0, 10, x2/1)", "AllReduce(out0 -> out0, 10 x int32, sum)",
                "Scale(out0 -> out0, 10, x0.5/3)"});
  Request avg = request("f", {5}, DataType::kBFloat16, ReduceOp::kAverage);
  CHECK(steps(response(ResponseType::kAllreduce, 1), {avg}, 0, 4) ==
        Strings{"AllReduce(in0 -> out0, 5 x bfloat16, sum)", "Scale(out0 -> out0, 5, x1/4)"});
  Request mx = request("m", {5}, DataType::kFloat16, ReduceOp::kMax);
  CHECK(steps(response(ResponseType::kAllreduce, 1), {mx}, 0, 4) == Strings{"AllReduce(in0 -> out0, 5 x float16, max)"});
}

TEST_CASE("Small tensors fuse: pack, one ncclAllReduce over the padded buffer, unpack", "[host][nccl_plan]") {
  std::vector<Request> reqs = {request("a", {3}, DataType::kFloat64, ReduceOp::kAverage),
                               request("b", {0}, DataType::kFloat64, ReduceOp::kAverage),
                               request("c", {5}, DataType::kFloat64, ReduceOp::kAverage)};
  for (auto& r : reqs) r.prescale = 0.25;
  auto plan = plan_nccl(response(ResponseType::kAllreduce, 3), reqs, 0, 2);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().fusion_bytes == 32 + 0 + 48);
  CHECK(plan.value().copies.offsets == std::vector<int64_t>{0, 32, 32});
  Strings s;
  for (const auto& st : plan.value().steps) s.push_back(describe_step(st, plan.value().dtype));
  CHECK(s == Strings{"Pack(3 tensors, x0.25/1)", "AllReduce(fusion -> fusion, 10 x float64, sum)",
                     "Unpack(3 tensors, x1/2)"});
}

TEST_CASE("Large tensors are reduced where they lie, grouped, with no copy", "[host][nccl_plan]") {
  const int64_t big = kNoCopyMinBytes / 4;
  std::vector<Request> reqs = {request("a", {big}), request("b", {big + 1})};
  CHECK(steps(response(ResponseType::kAllreduce, 2), reqs, 0, 2) ==
        Strings{"GroupStart", "AllReduce(in0 -> out0, " + std::to_string(big) + " x float32, sum)",
                "AllReduce(in1 -> out1, " + std::to_string(big + 1) + " x float32, sum)", "GroupEnd"});
  reqs.push_back(request("small", {1}));  // one small tensor: the whole batch is packed
  auto plan = plan_nccl(response(ResponseType::kAllreduce, 3), reqs, 0, 2);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().steps.front().kind == StepKind::kPack);
}

TEST_CASE("Allgather: one ncclAllGather for equal rows, broadcasts into place for varying rows", "[host][nccl_plan]") {
  Response resp = response(ResponseType::kAllgather, 2);
  resp.first_dims = {2, 2, 2, /* tensor 1: */ 1, 0, 3};
  std::vector<Request> reqs = {request("a", {2, 4}, DataType::kInt64, ReduceOp::kSum, CollectiveType::kAllgather),
                               request("b", {1, 2}, DataType::kInt64, ReduceOp::kSum, CollectiveType::kAllgather)};
  auto plan = plan_nccl(resp, reqs, 0, 3);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().output_shapes == std::vector<std::vector<int64_t>>{{6, 4}, {4, 2}});
  Strings s;
  for (const auto& st : plan.value().steps) s.push_back(describe_step(st, plan.value().dtype));
  CHECK(s == Strings{"GroupStart", "AllGather(in0 -> out0, 8 x int64)", "Broadcast(in1 -> out1, 2 x int64, root 0)",
                     "Broadcast(in1 -> out1+16, 6 x int64, root 2)", "GroupEnd"});
}

TEST_CASE("Reducescatter keeps the CPU path's blocks: ReduceScatter when even, Reduce per block when not",
          "[host][nccl_plan]") {
  Request even = request("e", {4, 3}, DataType::kFloat32, ReduceOp::kAverage, CollectiveType::kReducescatter);
  CHECK(steps(response(ResponseType::kReducescatter, 1), {even}, 1, 2) ==
        Strings{"ReduceScatter(in0 -> out0, 6 x float32, sum)", "Scale(out0 -> out0, 6, x1/2)"});
  Request odd = request("o", {5, 2}, DataType::kInt32, ReduceOp::kMin, CollectiveType::kReducescatter);
  odd.prescale = 3;
  auto plan = plan_nccl(response(ResponseType::kReducescatter, 1), {odd}, 2, 3);
  REQUIRE(plan.is_ok());
  CHECK(plan.value().output_shapes == std::vector<std::vector<int64_t>>{{1, 2}});  // rows 2,2,1
  CHECK(plan.value().fusion_bytes == 48);
  Strings s;
  for (const auto& st : plan.value().steps) s.push_back(describe_step(st, plan.value().dtype));
  CHECK(s == Strings{"Scale(in0 -> fusion, 10, x3/1)", "GroupStart", "Reduce(fusion -> out0, 4 x int32, min, root 0)",
                     "Reduce(fusion+16 -> out0, 4 x int32, min, root 1)",
                     "Reduce(fusion+32 -> out0, 2 x int32, min, root 2)", "GroupEnd"});
}

// Each rank plans from its own requests, as real ranks do: allgather and
// alltoall first dimensions differ between ranks; the calls may not.
TEST_CASE("Every rank issues the same collective calls", "[host][nccl_plan]") {
  using RequestsOf = std::function<std::vector<Request>(int rank)>;
  for (int size : {1, 2, 3, 4}) {
    std::vector<std::pair<Response, RequestsOf>> cases;
    cases.push_back({response(ResponseType::kAllreduce, 2), [](int) {
                       return std::vector<Request>{request("a", {7}), request("b", {9})};
                     }});
    cases.push_back({response(ResponseType::kReducescatter, 1), [](int) {
                       return std::vector<Request>{
                           request("r", {7, 2}, DataType::kFloat32, ReduceOp::kSum, CollectiveType::kReducescatter)};
                     }});
    Response bc = response(ResponseType::kBroadcast, 1);
    cases.push_back({bc, [size](int) {
                       Request br = request("bc", {3}, DataType::kUInt8, ReduceOp::kSum, CollectiveType::kBroadcast);
                       br.root_rank = size - 1;
                       return std::vector<Request>{br};
                     }});
    Response ag = response(ResponseType::kAllgather, 1);
    for (int r = 0; r < size; ++r) ag.first_dims.push_back(r % 2 + 1);
    cases.push_back({ag, [](int rank) {
                       return std::vector<Request>{request("g", {rank % 2 + 1, 2}, DataType::kFloat16, ReduceOp::kSum,
                                                           CollectiveType::kAllgather)};
                     }});
    Response aa = response(ResponseType::kAlltoall, 1);
    for (int from = 0; from < size; ++from)
      for (int to = 0; to < size; ++to) aa.splits.push_back((from + 2 * to) % 3);
    cases.push_back({aa, [&aa, size](int rank) {
                       Request r = request("x", {0, 4}, DataType::kInt32, ReduceOp::kSum, CollectiveType::kAlltoall);
                       for (int to = 0; to < size; ++to) r.splits.push_back(aa.splits[size_t(rank * size + to)]);
                       for (int64_t rows : r.splits) r.shape[0] += rows;
                       return std::vector<Request>{r};
                     }});
    for (const auto& [resp, requests_of] : cases) {
      auto first = plan_nccl(resp, requests_of(0), 0, size);
      REQUIRE(first.is_ok());
      for (int rank = 1; rank < size; ++rank) {
        auto other = plan_nccl(resp, requests_of(rank), rank, size);
        REQUIRE(other.is_ok());
        CHECK(collectives(other.value()) == collectives(first.value()));
      }
    }
  }
}

TEST_CASE("Alltoall: every send meets a receive of the same count, self included", "[host][nccl_plan]") {
  const int size = 3;
  Response resp = response(ResponseType::kAlltoall, 1);
  resp.splits = {1, 0, 2, /**/ 3, 1, 0, /**/ 0, 2, 2};  // sender-major
  Request r = request("x", {3, 5}, DataType::kFloat32, ReduceOp::kSum, CollectiveType::kAlltoall);
  std::map<std::tuple<int, int>, int64_t> sent, received;  // (from, to) -> elements
  for (int rank = 0; rank < size; ++rank) {
    auto plan = plan_nccl(resp, {r}, rank, size);
    REQUIRE(plan.is_ok());
    int64_t rows = 0;
    for (int s = 0; s < size; ++s) rows += resp.splits[size_t(s * size + rank)];
    CHECK(plan.value().output_shapes.front() == std::vector<int64_t>{rows, 5});
    CHECK(plan.value().steps.front().kind == StepKind::kGroupStart);
    CHECK(plan.value().steps.back().kind == StepKind::kGroupEnd);
    for (const auto& s : plan.value().steps) {
      if (s.kind == StepKind::kSend) sent[{rank, s.peer}] += s.count;
      if (s.kind == StepKind::kRecv) received[{s.peer, rank}] += s.count;
    }
  }
  CHECK(sent == received);
  CHECK(sent.size() == 6);  // the zero splits send nothing
  CHECK(sent[{1, 0}] == 15);
  CHECK(steps(resp, {r}, 1, size) == Strings{"GroupStart", "Send(in0, 15 x float32, to 0)", "Send(in0+60, 5 x float32, to 1)",
                                             "Recv(out0, 5 x float32, from 1)", "Recv(out0+20, 10 x float32, from 2)",
                                             "GroupEnd"});
}

TEST_CASE("What NCCL cannot run here is refused naming the tensor", "[host][nccl_plan]") {
  Response joined = response(ResponseType::kAllreduce, 1);
  joined.joined_specs.push_back(request("a", {2}));
  auto s = plan_nccl(joined, {request("grad", {2})}, 0, 2);
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.status().message(), Catch::Contains("'grad'"));
  CHECK_THAT(s.status().message(), Catch::Contains("join()"));
  Response ag = response(ResponseType::kAllgather, 1);
  ag.first_dims = {1};  // two ranks need two
  CHECK(plan_nccl(ag, {request("g", {1})}, 0, 2).status().code() == StatusCode::kInternal);
  CHECK_FALSE(plan_nccl(response(ResponseType::kAllreduce, 1), {}, 0, 1).is_ok());
}
