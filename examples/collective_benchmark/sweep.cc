// Size sweep: one float32 sum allreduce per size through the whole Chorus
// runtime (enqueue to completed wait), then raw MPI_Allreduce on the same
// buffers. Reports time, algbw, busbw = algbw * 2(n-1)/n, #wrong, ratio.
#include <cstdio>
#include <vector>

#include "bench_util.h"

namespace bench {

namespace {

int iterations_for(const Settings& s, int64_t bytes) {
  if (s.iters > 0) return s.iters;
  if (bytes <= (1 << 20)) return 50;
  if (bytes <= (16 << 20)) return 10;
  return 5;
}

struct Timing {
  double seconds = 0;  // median over iterations of the slowest rank's time
  int64_t wrong = 0;
};

template <class Run>
Timing measure(int iters, Run&& run, const std::vector<float>& out, int size) {
  std::vector<double> times;
  run();  // warm-up: first touches, MPI connection setup
  for (int it = 0; it < iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_seconds();
    run();
    times.push_back(slowest_rank(now_seconds() - t0));
  }
  Timing t;
  t.seconds = median(times);
  t.wrong = count_wrong(out.data(), static_cast<int64_t>(out.size()), size);
  return t;
}

}  // namespace

void run_sweep(const Settings& s) {
  const int rank = chorus::rank(), size = chorus::size();
  const double bus_factor = size > 1 ? 2.0 * (size - 1) / size : 1.0;
  if (rank == 0) {
    std::printf("\n# sweep: float32 sum, out of place; chorus = enqueue..wait through the runtime\n");
    std::printf("%12s %10s | %10s %9s %9s %7s | %10s %9s %9s %7s | %7s\n", "bytes", "elements",
                "chorus us", "algbw", "busbw", "#wrong", "mpi us", "algbw", "busbw", "#wrong",
                "speedup");
  }
  for (int64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) in[static_cast<size_t>(i)] = exact_input(rank, i);
    const int iters = iterations_for(s, bytes);
    auto vin = f32_view(in.data(), n), vout = f32_view(out.data(), n);
    chorus::AllreduceOptions sum;
    sum.op = chorus::ReduceOp::kSum;
    const std::string name = "sweep." + std::to_string(bytes);

    const Timing c = measure(iters, [&] { chorus::allreduce_async(name, vin, vout, sum).wait(); }, out, size);
    std::fill(out.begin(), out.end(), 0.0f);
    const Timing m = measure(iters, [&] {
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }, out, size);

    int64_t wrong[2] = {c.wrong, m.wrong}, total_wrong[2] = {0, 0};
    MPI_Reduce(wrong, total_wrong, 2, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double calg = bytes / c.seconds / 1e9, malg = bytes / m.seconds / 1e9;
      std::printf("%12lld %10lld | %10.1f %9.3f %9.3f %7lld | %10.1f %9.3f %9.3f %7lld | %6.2fx\n",
                  (long long)bytes, (long long)n, c.seconds * 1e6, calg, calg * bus_factor,
                  (long long)total_wrong[0], m.seconds * 1e6, malg, malg * bus_factor,
                  (long long)total_wrong[1], m.seconds / c.seconds);
      std::fflush(stdout);
    }
  }
}

}  // namespace bench
