// Chorus's allreduce over whichever transport the job was started on
// (mpirun, chorusrun --tcp, torchrun's variables), for comparing transports
// (docs/dependencies.md): float32 sum in place at 4 KiB, 16 MiB and 64 MiB,
// medians, in nccl-tests' columns (time in us, algbw and busbw in GB/s,
// #wrong: elements that differ from the expected sum on this rank).
//   chorusrun --tcp -np 2 build/benchmarks/transport_allreduce
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"

using Clock = std::chrono::steady_clock;

namespace {

double run_once(std::vector<float>& v, const std::string& name) {
  auto t = std::make_shared<chorus::HostTensorView>(v.data(), chorus::DataType::kFloat32,
                                                    chorus::TensorShape{static_cast<int64_t>(v.size())});
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  const auto t0 = Clock::now();
  chorus::allreduce_async(name, t, t, sum).wait();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  int64_t bytes;
  int iterations;
  int warmup;
};

// One size: every rank starts from 1 (rank + 1 on the checked call), so the
// sum is known.
void measure(const Row& row, int rank, int size) {
  const size_t count = static_cast<size_t>(row.bytes / 4);
  std::vector<float> v(count);
  std::vector<double> times;
  const std::string name = "allreduce." + std::to_string(row.bytes);
  for (int i = 0; i < row.warmup + row.iterations; ++i) {
    std::fill(v.begin(), v.end(), 1.0f);
    const double s = run_once(v, name);
    if (i >= row.warmup) times.push_back(s);
  }
  std::fill(v.begin(), v.end(), static_cast<float>(rank + 1));
  run_once(v, name);
  const float expected = static_cast<float>(size * (size + 1) / 2);
  const long long wrong = std::count_if(v.begin(), v.end(), [&](float x) { return x != expected; });
  const double t = median(times);
  const double algbw = static_cast<double>(row.bytes) / t / 1e9;
  const double busbw = algbw * 2.0 * (size - 1) / size;
  if (rank == 0)
    std::printf("%12lld %12zu %8s %6s %10.1f %8.3f %8.3f %6lld\n", static_cast<long long>(row.bytes), count, "float",
                "sum", t * 1e6, algbw, busbw, wrong);
}

}  // namespace

int main() {
  chorus::init();
  const int rank = chorus::rank(), size = chorus::size();
  if (rank == 0) {
    std::printf("# Chorus allreduce, %d ranks, in place, medians\n", size);
    std::printf("%12s %12s %8s %6s %10s %8s %8s %6s\n", "size", "count", "type", "redop", "time", "algbw", "busbw",
                "#wrong");
    std::printf("%12s %12s %8s %6s %10s %8s %8s %6s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  for (const Row& row : {Row{4096, 1800, 200}, Row{16 << 20, 7, 1}, Row{64 << 20, 7, 1}}) measure(row, rank, size);
  chorus::shutdown();
  return 0;
}
