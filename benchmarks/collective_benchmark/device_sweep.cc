// --device cuda, size sweep: one float32 sum allreduce per size on device
// buffers through the whole Chorus runtime (enqueue to completed wait), then
// raw ncclAllReduce on the same buffers (launch to stream synchronized), in
// nccl-tests columns: size, count, type, time, algbw, busbw = algbw *
// 2(n-1)/n, #wrong (checked on the host against the known sums).
#include <cstdio>
#include <string>
#include <vector>

#include "device_bench.h"

namespace bench {

namespace {

int device_iterations(const Settings& s, int64_t bytes) {
  if (s.iters > 0) return s.iters;
  return bytes <= (16 << 20) ? 50 : 20;
}

/// Median over iterations of the slowest rank's time; one warm-up first.
template <class Run>
double median_time(int iters, int size, Run&& run) {
  run();
  std::vector<double> times;
  for (int it = 0; it < iters; ++it) {
    line_up(size);
    const double t0 = now_seconds();
    run();
    times.push_back(slowest(now_seconds() - t0, size));
  }
  return median(times);
}

void print_columns(double seconds, int64_t bytes, double bus_factor, int64_t wrong) {
  const double algbw = double(bytes) / seconds / 1e9;
  std::printf(" %10.1f %8.2f %8.2f %7lld |", seconds * 1e6, algbw, algbw * bus_factor, (long long)wrong);
}

}  // namespace

void device_sweep(DeviceRun& run) {
  const Settings& s = run.settings;
  CudaRig& rig = run.rig;
  const double bus_factor = 2.0 * (run.size - 1) / run.size;  // nccl-tests: 0 at one rank
  if (run.rank == 0) {
    std::printf("\n# sweep: float32 sum, out of place, device buffers; chorus = enqueue..wait through the runtime,"
                " nccl = ncclAllReduce..stream synchronized; medians of the slowest rank\n");
    std::printf("%12s %10s %6s | %10s %8s %8s %7s | %10s %8s %8s %7s | %s\n", "size", "count", "type", "time(us)",
                "algbw", "busbw", "#wrong", "time(us)", "algbw", "busbw", "#wrong", "chorus/nccl");
  }
  for (int64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int iters = device_iterations(s, bytes);
    auto in = rig.device_floats(n), out = rig.device_floats(n);
    rig.fill_inputs(in.get(), n, run.rank, 0);
    rig.zero(out.get(), n);
    rig.synchronize();
    const auto vin = device_view(rig, in.get(), n), vout = device_view(rig, out.get(), n);
    chorus::AllreduceOptions sum;
    sum.op = chorus::ReduceOp::kSum;
    const std::string name = "sweep." + std::to_string(bytes);
    auto through_chorus = [&] { chorus::allreduce_async(name, vin, vout, sum).wait(); };

    const double chorus_s = median_time(iters, run.size, through_chorus);
    int64_t chorus_wrong = rig.count_wrong(out.get(), n, run.size, 0);
    // Zeros queued on the producer stream just before the enqueue: Chorus
    // must order its reduction after them, or the output stays zero.
    rig.zero(out.get(), n);
    through_chorus();
    chorus_wrong = sum_over_ranks(chorus_wrong + rig.count_wrong(out.get(), n, run.size, 0));

    double nccl_s = 0;
    int64_t nccl_wrong = 0;
    if (run.reference) {
      rig.zero(out.get(), n);
      nccl_s = median_time(iters, run.size, [&] {
        rig.raw_allreduce(in.get(), out.get(), n);
        rig.synchronize();
      });
      nccl_wrong = sum_over_ranks(rig.count_wrong(out.get(), n, run.size, 0));
    }
    run.wrong += chorus_wrong + nccl_wrong;
    if (run.reference && bytes >= (1 << 20) && chorus_s / nccl_s > run.worst_sweep_ratio) {
      run.worst_sweep_ratio = chorus_s / nccl_s;
      run.worst_sweep_bytes = bytes;
    }
    if (run.rank == 0) {
      std::printf("%12lld %10lld %6s |", (long long)bytes, (long long)n, "float");
      print_columns(chorus_s, bytes, bus_factor, chorus_wrong);
      if (run.reference) {
        print_columns(nccl_s, bytes, bus_factor, nccl_wrong);
        std::printf(" %10.3f\n", chorus_s / nccl_s);
      } else {
        std::printf(" %10s %8s %8s %7s | %10s\n", "n/a", "n/a", "n/a", "n/a", "n/a");
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace bench
