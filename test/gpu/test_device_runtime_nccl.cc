// On a GPU: a CUDA allreduce through the whole runtime on the NCCL path at
// one rank, and what the runtime's statistics say about it (autotune scores
// bytes_allreduced, so GPU work must count there as CPU work does) and what
// its timeline shows.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "chorus/runtime.h"
#include "comm/loopback/loopback_backend.h"
#include "device_buffer.h"
#include "api/runtime_access.h"
#include "device/build_support.h"

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

TEST_CASE("NCCL CUDA allreduces through the runtime have NCCL_ALLREDUCE spans on their timeline rows",
          "[device][nccl][timeline]") {
  const std::string path = "chorus_test_nccl_timeline.json";
  RuntimeOptions options;
  options.log_level = LogLevel::kError;
  options.gpu_operations = GpuOperations::kNccl;
  options.timeline_path = path;
  auto support = std::make_shared<const DeviceSupport>(build_device_support());
  std::unique_ptr<Runtime> rt = RuntimeAccess::make(make_loopback_backend(make_loopback_world(1, 0), 0), options, support);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const size_t n = 1000;
  DeviceBuffer a(n * sizeof(float)), b(n * sizeof(float));
  REQUIRE(cudaMemset(a.data(), 0, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemset(b.data(), 0, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  auto ta = std::make_shared<DeviceTensorView>(a.data(), DataType::kFloat32, TensorShape{int64_t(n)}, 0, nullptr);
  auto tb = std::make_shared<DeviceTensorView>(b.data(), DataType::kFloat32, TensorShape{int64_t(n)}, 0, nullptr);
  std::vector<Handle> handles = rt->grouped_allreduce_async({"tl.a", "tl.b"}, {ta, tb}, {});
  for (Handle& h : handles) REQUIRE(h.wait_status().is_ok());
  rt.reset();  // closes the trace
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string trace = text.str();
  std::remove(path.c_str());
  size_t spans = 0;
  for (size_t at = trace.find("\"name\":\"NCCL_ALLREDUCE\""); at != std::string::npos;
       at = trace.find("\"name\":\"NCCL_ALLREDUCE\"", at + 1)) {
    ++spans;
  }
  CHECK(spans == 2);  // one per tensor, on its own row
  CHECK(trace.find("\"args\":{\"name\":\"tl.a\"}") != std::string::npos);
  CHECK(trace.find("\"args\":{\"name\":\"tl.b\"}") != std::string::npos);
  CHECK(trace.find("NEGOTIATE_ALLREDUCE") < trace.find("NCCL_ALLREDUCE"));
}
