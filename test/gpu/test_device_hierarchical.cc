// On a GPU, at one rank (the only layout one GPU allows): the hierarchical
// allreduce's machinery end to end: communicators split from the set's
// (non-blocking ncclCommSplit), the plan's ReduceScatter / AllReduce /
// AllGather each on its own communicator, in place on the fusion buffer,
// and the result; and SetCommunicators at one rank, where the hosts allow
// no hierarchy. The layouts of several hosts are checked by
// test_nccl_hierarchical_plan.cc's host simulation.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "comm/loopback/loopback_backend.h"
#include "device_buffer.h"
#include "device/cuda/device_stream.h"
#include "device/cuda/nccl_launcher.h"
#include "device/cuda/nccl_symbols.h"
#include "device/cuda/set_communicators.h"
#include "kernels/reduce_kernels.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::detail::gpu;
using chorus::test::DeviceBuffer;

TEST_CASE("Hierarchical plan at one rank: split communicators, each call on its own, in place",
          "[device][nccl][hierarchical]") {
  NcclSymbols symbols;
  REQUIRE(load_nccl(&symbols).is_ok());
  auto backend = make_loopback_backend(make_loopback_world(1), 0);
  REQUIRE(backend->start().is_ok());
  std::unique_ptr<NcclComm> set, host, across;
  REQUIRE(NcclComm::create(backend->collectives(), 0, 1, 0, "test.set", 60, &set).is_ok());
  Status s = NcclComm::split(*set, 0, 0, "test.set.host", 60, &host);
  INFO(s.message());
  REQUIRE(s.is_ok());
  REQUIRE(NcclComm::split(*set, 0, 0, "test.set.across", 60, &across).is_ok());
  CHECK(host->size() == 1);
  CHECK(host->rank() == 0);

  const std::vector<int64_t> counts = {3, 0, 1001};
  Response response;
  response.type = ResponseType::kAllreduce;
  std::vector<Request> requests;
  std::vector<std::unique_ptr<DeviceBuffer>> ins, outs;
  std::vector<std::vector<float>> values;
  PlanBuffers buffers;
  for (size_t t = 0; t < counts.size(); ++t) {
    Request r;
    r.name = "h" + std::to_string(t);
    r.shape = {counts[t]};
    r.dtype = DataType::kFloat32;
    r.op = ReduceOp::kSum;
    r.prescale = 0.5;
    r.postscale = 3.0;
    requests.push_back(r);
    response.names.push_back(r.name);
    values.emplace_back(size_t(counts[t]));
    for (size_t i = 0; i < values.back().size(); ++i) values.back()[i] = float(i % 13) - 6.0f;
    const size_t bytes = size_t(counts[t]) * 4;
    ins.push_back(std::make_unique<DeviceBuffer>(bytes));
    outs.push_back(std::make_unique<DeviceBuffer>(bytes));
    const char* raw = reinterpret_cast<const char*>(values.back().data());
    ins.back()->upload(std::vector<char>(raw, raw + bytes));
    buffers.inputs.push_back(ins.back()->data());
    buffers.outputs.push_back(outs.back()->data());
  }
  const HostPlace alone{0, 1};
  auto plan = plan_nccl(response, requests, 0, 1, &alone);
  REQUIRE(plan.is_ok());
  REQUIRE(plan.value().steps.size() == 5);  // pack, the three calls, unpack
  DeviceBuffer fusion(size_t(plan.value().fusion_bytes));
  buffers.fusion = fusion.data();
  DeviceStream stream;
  REQUIRE(DeviceStream::create(0, &stream).is_ok());
  PlanComms comms;
  comms.set = set->get();
  comms.host = host->get();
  comms.across = across->get();
  s = launch_plan(plan.value(), buffers, comms, stream.get(), OpDeadline::after(60), "hierarchical test");
  INFO(s.message());
  REQUIRE(s.is_ok());
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  for (size_t t = 0; t < counts.size(); ++t) {
    const std::vector<char> got = outs[t]->download();
    std::vector<float> want(values[t].size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = values[t][i] * 0.5f * 3.0f;
    CHECK(std::memcmp(got.data(), want.data(), want.size() * 4) == 0);
  }
  // Without the host's communicator the plan's call is refused, naming it.
  comms.host = nullptr;
  s = launch_plan(plan.value(), buffers, comms, stream.get(), OpDeadline::after(60), "hierarchical test");
  CHECK_FALSE(s.is_ok());
  CHECK(s.message().find("ReduceScatter") != std::string::npos);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  CHECK(across->finalize_and_destroy(30).is_ok());
  CHECK(host->finalize_and_destroy(30).is_ok());
  CHECK(set->finalize_and_destroy(30).is_ok());
  backend->stop();
}

TEST_CASE("SetCommunicators at one rank: hierarchical asked for, none possible, no warning",
          "[device][nccl][hierarchical]") {
  auto backend = make_loopback_backend(make_loopback_world(1), 0);
  REQUIRE(backend->start().is_ok());
  std::unique_ptr<SetCommunicators> comms;
  std::string warning;
  const Status s = SetCommunicators::create({backend.get(), 0, "test.one", 60, true}, &comms, &warning);
  INFO(s.message());
  REQUIRE(s.is_ok());
  CHECK(comms->hierarchy() == nullptr);
  CHECK(warning.empty());
  CHECK(comms->plan_comms().host == nullptr);
  CHECK(comms->error_source()->poll().is_ok());
  comms->finalize_and_destroy(30);
  backend->stop();
}
