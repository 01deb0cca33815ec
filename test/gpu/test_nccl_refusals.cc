// NcclDeviceOperations refuses what the agreed response alone rules out
// before creating its communicator (a collective): no GPU needed (host only).
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/loopback/loopback_backend.h"
#include "device/cuda/gpu_devices.h"
#include "device/cuda/nccl_device_operations.h"
#include "engine/handle_state.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

/// Claims to live on GPU 0; its bytes are never touched by a refusal.
class PretendDeviceTensor final : public Tensor {
 public:
  DataType dtype() const override { return DataType::kFloat32; }
  TensorShape shape() const override { return TensorShape{4}; }
  const void* data() const override { return bytes_.data(); }
  void* mutable_data() override { return bytes_.data(); }
  int64_t size_bytes() const override { return 16; }
  int device() const override { return 0; }

 private:
  std::vector<float> bytes_ = std::vector<float>(4);
};

// An entry of `dtype` that claims to live on GPU 0, with a handle to wait on.
TensorEntry pretend_entry(CollectiveType type, const std::string& name, DataType dtype) {
  TensorEntry e;
  e.request.type = type;
  e.request.name = name;
  e.request.dtype = dtype;
  e.request.shape = {4};
  e.request.device = 0;
  e.input = e.output = std::make_shared<PretendDeviceTensor>();
  e.handle = std::make_shared<HandleState>();
  return e;
}

}  // namespace

TEST_CASE("A device allreduce while ranks have joined is refused before any communicator is made",
          "[host][nccl_ops]") {
  auto backend = make_loopback_backend(make_loopback_world(1), 0);
  REQUIRE(backend->start().is_ok());
  auto devices = gpu::make_gpu_devices();
  auto ops = gpu::make_nccl_device_operations(*backend, {}, devices);
  TensorEntry e = pretend_entry(CollectiveType::kAllreduce, "grad.j", DataType::kFloat32);
  auto h = e.handle;
  Response r;
  r.type = ResponseType::kAllreduce;
  r.names = {"grad.j"};
  r.joined_specs = {e.request};
  ops->execute(r, {e});
  const Status s = h->wait(std::chrono::milliseconds(5000));
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("grad.j"));
  CHECK_THAT(s.message(), Catch::Contains("join() supports host tensors only"));
  // No communicator: without a GPU its creation would have failed (a fault);
  // with one, GPU 0 would now be claimed by this set.
  CHECK(ops->fault().is_ok());
  CHECK(devices->claims().claim(0, 99, "another set's tensor").is_ok());
  ops.reset();
  backend->stop();
}

TEST_CASE("An int16 reduction is refused before any communicator is made: NCCL has no int16", "[host][nccl_ops]") {
  auto backend = make_loopback_backend(make_loopback_world(1), 0);
  REQUIRE(backend->start().is_ok());
  auto devices = gpu::make_gpu_devices();
  auto ops = gpu::make_nccl_device_operations(*backend, {}, devices);
  for (CollectiveType type : {CollectiveType::kAllreduce, CollectiveType::kReducescatter}) {
    TensorEntry e = pretend_entry(type, "shorts", DataType::kInt16);
    auto h = e.handle;
    Response r;
    r.type = type == CollectiveType::kAllreduce ? ResponseType::kAllreduce : ResponseType::kReducescatter;
    r.names = {"shorts"};
    ops->execute(r, {e});
    const Status s = h->wait(std::chrono::milliseconds(5000));
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("'shorts'") && Catch::Contains("NCCL has no int16") &&
                                Catch::Contains("CHORUS_GPU_OPERATIONS=staged"));
  }
  CHECK(ops->fault().is_ok());  // an input the response rules out, not a fault
  ops.reset();
  backend->stop();
}
