// Runs the device tests only where CUDA finds a GPU; otherwise exits 77,
// CTest's SKIP_RETURN_CODE for this test, so a CPU-only build reports it skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include <cuda_runtime_api.h>

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t r = cudaGetDeviceCount(&devices);
  if (r != cudaSuccess || devices == 0) {
    std::printf("no CUDA device (%s): skipping the GPU tests\n",
                r != cudaSuccess ? cudaGetErrorString(r) : "cudaGetDeviceCount found 0");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
