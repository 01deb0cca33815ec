// One binary for the toolkit's tests. `--device` (first argument) selects the
// tests that need a GPU ([device]) and exits 77, CTest's SKIP_RETURN_CODE,
// when CUDA finds none; without it, the host tests ([host]) run anywhere.
// (One Catch2 main instead of two: it is the slowest file to compile.)
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime_api.h>

int main(int argc, char** argv) {
  const bool device = argc > 1 && std::strcmp(argv[1], "--device") == 0;
  std::vector<char*> args(argv, argv + argc);
  if (device) {
    int devices = 0;
    const cudaError_t r = cudaGetDeviceCount(&devices);
    if (r != cudaSuccess || devices == 0) {
      std::printf("no CUDA device (%s): skipping the GPU tests\n",
                  r != cudaSuccess ? cudaGetErrorString(r) : "cudaGetDeviceCount found 0");
      return 77;
    }
    args.erase(args.begin() + 1);
  }
  // Only the tests of the chosen kind, unless the caller named tests itself.
  static char device_tag[] = "[device]", host_tag[] = "[host]";
  if (args.size() == 1) args.push_back(device ? device_tag : host_tag);
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
