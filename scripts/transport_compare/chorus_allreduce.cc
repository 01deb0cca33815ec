// Chorus allreduce timing for comparing transports (docs/dependencies.md):
// median latency of a 4 KiB float allreduce and bus bandwidth of 16 and
// 64 MiB ones. Built by hand against libchorus:
//   g++ -O2 -std=c++17 chorus_allreduce.cc -Icore/include -Lbuild/core -lchorus -o chorus_allreduce
// then started under mpirun or by test/tcp/run_tcp_job.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"

using Clock = std::chrono::steady_clock;

static double run_once(std::vector<float>& v, const std::string& name) {
  auto t = std::make_shared<chorus::HostTensorView>(v.data(), chorus::DataType::kFloat32,
                                                    chorus::TensorShape{static_cast<int64_t>(v.size())});
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  const auto t0 = Clock::now();
  chorus::allreduce_async(name, t, t, sum).wait();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  chorus::init();
  const int n = chorus::size();
  std::vector<float> small(1024, 1.0f);
  std::vector<double> times;
  for (int i = 0; i < 2000; ++i) times.push_back(run_once(small, "small"));
  times.erase(times.begin(), times.begin() + 200);  // warm-up
  const double lat = median(times);
  for (int64_t mib : {16, 64}) {
    std::vector<float> big(static_cast<size_t>(mib) << 18, 1.0f);
    std::vector<double> t;
    for (int i = 0; i < 7; ++i) t.push_back(run_once(big, "big" + std::to_string(mib)));
    const double busbw = 2.0 * (n - 1) / n * static_cast<double>(mib << 20) / median(t) / 1e9;
    if (chorus::rank() == 0) std::printf("np=%d %lld MiB: busbw %.2f GB/s\n", n, static_cast<long long>(mib), busbw);
  }
  if (chorus::rank() == 0) std::printf("np=%d 4 KiB allreduce: median %.1f us\n", n, lat * 1e6);
  chorus::shutdown();
  return 0;
}
