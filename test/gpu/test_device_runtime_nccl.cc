// On a GPU: a CUDA allreduce through the whole runtime on the NCCL path at
// one rank, and what the runtime's statistics say about it (autotune scores
// bytes_allreduced, so GPU work must count there as CPU work does).
#include <catch2/catch.hpp>

#include <vector>

#include "chorus/runtime.h"
#include "comm/loopback/loopback_backend.h"
#include "device_buffer.h"
#include "runtime/runtime_access.h"

using namespace chorus;
using namespace chorus::detail;
using chorus::test::DeviceBuffer;

TEST_CASE("NCCL CUDA allreduces through the runtime count in its statistics", "[device][nccl][stats]") {
  RuntimeOptions options;
  options.log_level = LogLevel::kError;
  options.gpu_operations = GpuOperations::kNccl;
  auto support = std::make_shared<const DeviceSupport>(build_device_support());
  std::unique_ptr<Runtime> rt = RuntimeAccess::make(make_loopback_backend(make_loopback_world(1, 0), 0), options, support);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const size_t n = 1000;
  DeviceBuffer a(n * sizeof(float)), b(n * sizeof(float));
  std::vector<float> ones(n, 1.0f);
  REQUIRE(cudaMemcpy(a.data(), ones.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(b.data(), ones.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  auto ta = std::make_shared<DeviceTensorView>(a.data(), DataType::kFloat32, TensorShape{int64_t(n)}, 0, nullptr);
  auto tb = std::make_shared<DeviceTensorView>(b.data(), DataType::kFloat32, TensorShape{int64_t(n)}, 0, nullptr);
  std::vector<Handle> handles = rt->grouped_allreduce_async({"a", "b"}, {ta, tb}, {});
  for (Handle& h : handles) REQUIRE(h.wait_status().is_ok());
  const RuntimeStats st = rt->stats();
  rt.reset();
  CHECK(st.tensors_allreduced == 2);
  CHECK(st.bytes_allreduced == int64_t(2 * n * sizeof(float)));
  CHECK(st.allreduce_ops == 1);
  CHECK(st.errors == 0);
}
