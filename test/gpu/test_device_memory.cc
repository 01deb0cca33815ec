// On a GPU: the CUDA DeviceMemory the runtime records ready points with and
// the staged path copies through (device/cuda/cuda_device_memory.cc).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "device_buffer.h"
#include "device/cuda/cuda_device_memory.h"

using namespace chorus;
using namespace chorus::detail;
using chorus::test::DeviceBuffer;

namespace {

void CUDART_CB sleep_100ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

// Polls `mark` until it is done (OK) or 10 s passed.
Status finished(const DeviceMark& mark) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Status s = mark.query();
  while (s.code() == StatusCode::kInProgress && std::chrono::steady_clock::now() < until) s = mark.query();
  return s;
}

}  // namespace

TEST_CASE("CUDA device memory: the staged copy waits for a slow producer's ready point", "[device][staged]") {
  std::shared_ptr<DeviceMemory> memory = gpu::make_cuda_device_memory();
  cudaStream_t producer = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking) == cudaSuccess);
  const size_t bytes = 1 << 20;
  DeviceBuffer tensor(bytes);
  StatusOr<std::shared_ptr<void>> pinned_in = memory->allocate_pinned(bytes);
  StatusOr<std::shared_ptr<void>> pinned_out = memory->allocate_pinned(bytes);
  REQUIRE(pinned_in.is_ok());
  REQUIRE(pinned_out.is_ok());
  std::memset(pinned_in.value().get(), 42, bytes);
  std::memset(pinned_out.value().get(), 0, bytes);
  // The producer: 100 ms of other work, then it writes the tensor.
  REQUIRE(cudaLaunchHostFunc(producer, sleep_100ms, nullptr) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(tensor.data(), pinned_in.value().get(), bytes, cudaMemcpyHostToDevice, producer) ==
          cudaSuccess);
  StatusOr<std::shared_ptr<DeviceMark>> ready = memory->record(0, producer);
  REQUIRE(ready.is_ok());
  CHECK(ready.value()->native() != nullptr);
  REQUIRE(memory->wait(0, *ready.value()).is_ok());
  REQUIRE(memory->copy_to_host(0, pinned_out.value().get(), tensor.data(), bytes).is_ok());
  StatusOr<std::shared_ptr<DeviceMark>> copied = memory->mark(0);
  REQUIRE(copied.is_ok());
  CHECK(copied.value()->query().code() == StatusCode::kInProgress);  // the producer is still sleeping
  REQUIRE(finished(*copied.value()).is_ok());
  CHECK(static_cast<unsigned char*>(pinned_out.value().get())[bytes - 1] == 42);
  // And back: host -> device on the staging stream.
  std::memset(pinned_in.value().get(), 7, bytes);
  REQUIRE(memory->copy_to_device(0, tensor.data(), pinned_in.value().get(), bytes).is_ok());
  StatusOr<std::shared_ptr<DeviceMark>> back = memory->mark(0);
  REQUIRE(back.is_ok());
  REQUIRE(finished(*back.value()).is_ok());
  CHECK(tensor.download()[0] == 7);
  REQUIRE(cudaStreamDestroy(producer) == cudaSuccess);
}

TEST_CASE("CUDA device memory: a device that does not exist is refused, naming it", "[device][staged]") {
  std::shared_ptr<DeviceMemory> memory = gpu::make_cuda_device_memory();
  StatusOr<std::shared_ptr<DeviceMark>> r = memory->record(4096, nullptr);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("CUDA device 4096"));
}

TEST_CASE("CUDA device memory without a GPU: a clear refusal", "[host][staged]") {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) return;  // the [device] tests cover this machine
  StatusOr<std::shared_ptr<DeviceMark>> r = gpu::make_cuda_device_memory()->record(0, nullptr);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("no usable CUDA device"));
}
