#pragma once
// Device memory for the GPU tests: owned, filled from and read back to host vectors.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include <cuda_runtime_api.h>

namespace chorus::test {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { REQUIRE(cudaMalloc(&data_, bytes > 0 ? bytes : 1) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  char* data() const { return static_cast<char*>(data_); }
  void upload(const std::vector<char>& host) const {
    REQUIRE(host.size() <= bytes_);
    REQUIRE(cudaMemcpy(data_, host.data(), host.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    // From pageable memory cudaMemcpy may return before the DMA lands; work
    // on a non-blocking stream would not wait for it.
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  }
  std::vector<char> download() const {
    std::vector<char> host(bytes_);
    REQUIRE(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace chorus::test
