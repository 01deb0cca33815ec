// --device cuda, many small tensors and one small one:
// - the storm: 200 x 16 KiB device tensors enqueued at once (negotiated and
//   fused by Chorus), once as 200 allreduce_async calls and once as one
//   grouped_allreduce_async, against one ncclAllReduce of the same bytes
//   packed by hand (they lie side by side in one buffer, so no packing copy
//   is timed);
// - latency: one 4 KiB allreduce through the runtime against raw NCCL.
#include <cstdio>
#include <string>
#include <vector>

#include "device_bench.h"

namespace bench {

namespace {

/// One way of enqueueing the storm, and what it measured.
struct StormMode {
  const char* label;
  std::vector<double> total, enqueue;
  int64_t wrong = 0;
};

void print_storm(const DeviceRun& run, const StormMode (&modes)[2], const std::vector<double>& packed,
                 int64_t packed_wrong) {
  const Settings& s = run.settings;
  std::printf("\n# storm: %d tensors x %lld bytes float32 sum per round on the device, %d rounds, medians\n",
              s.storm_tensors, (long long)s.storm_bytes, s.storm_rounds);
  for (const StormMode& m : modes) {
    std::printf("%-40s %10.1f us  (enqueue %.1f us, #wrong %lld)\n", m.label, median(m.total) * 1e6,
                median(m.enqueue) * 1e6, (long long)m.wrong);
  }
  if (run.reference) {
    std::printf("%-40s %10.1f us  (chorus / this = %.3f and %.3f, #wrong %lld)\n", "ncclAllReduce x 1, packed by hand",
                median(packed) * 1e6, run.storm_ratio, run.storm_grouped_ratio, (long long)packed_wrong);
  }
  std::fflush(stdout);
}

}  // namespace

void device_storm(DeviceRun& run) {
  const Settings& s = run.settings;
  CudaRig& rig = run.rig;
  const int count = s.storm_tensors;
  const int64_t n = s.storm_bytes / 4, total = n * count;
  // Tensor t is elements [t*n, (t+1)*n) of one buffer: the packed reference
  // reduces exactly the storm's bytes.
  auto in = rig.device_floats(total), out = rig.device_floats(total), packed_out = rig.device_floats(total);
  rig.fill_inputs(in.get(), total, run.rank, 0);
  rig.zero(out.get(), total);
  rig.zero(packed_out.get(), total);
  rig.synchronize();
  std::vector<std::shared_ptr<chorus::Tensor>> vin, vout;
  std::vector<std::string> names;
  for (int t = 0; t < count; ++t) {
    vin.push_back(device_view(rig, in.get() + t * n, n));
    vout.push_back(device_view(rig, out.get() + t * n, n));
    names.push_back("storm." + std::to_string(t));
  }
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  std::vector<std::string> group_names;
  for (int t = 0; t < count; ++t) group_names.push_back("storm.group." + std::to_string(t));

  // Two ways to enqueue the same tensors: one allreduce_async each (a ready
  // event recorded per tensor), and one grouped_allreduce_async (one event
  // for all: they come from one stream at one moment).
  StormMode modes[2] = {{"chorus, one allreduce_async each", {}, {}}, {"chorus, one grouped_allreduce_async", {}, {}}};
  std::vector<double> tp;
  for (int m = 0; m < 2; ++m) {
    rig.zero(out.get(), total);
    for (int round = -1; round < s.storm_rounds; ++round) {  // round -1: warm-up
      line_up(run.size);
      const double t0 = now_seconds();
      std::vector<chorus::Handle> handles;
      if (m == 0) {
        for (int t = 0; t < count; ++t) handles.push_back(chorus::allreduce_async(names[t], vin[t], vout[t], sum));
      } else {
        handles = chorus::grouped_allreduce_async(group_names, vin, vout, sum);
      }
      const double enqueued = now_seconds() - t0;
      for (auto& h : handles) h.wait();
      const double c = slowest(now_seconds() - t0, run.size);
      if (round >= 0) {
        modes[m].total.push_back(c);
        modes[m].enqueue.push_back(enqueued);
      }
    }
    modes[m].wrong = sum_over_ranks(rig.count_wrong(out.get(), total, run.size, 0));
    run.wrong += modes[m].wrong;
  }
  if (run.reference) {
    for (int round = -1; round < s.storm_rounds; ++round) {
      const double p = slowest(timed_raw_allreduce(run, in.get(), packed_out.get(), total), run.size);
      if (round >= 0) tp.push_back(p);
    }
  }
  const int64_t packed_wrong =
      run.reference ? sum_over_ranks(rig.count_wrong(packed_out.get(), total, run.size, 0)) : 0;
  run.wrong += packed_wrong;
  if (run.reference) {
    run.storm_ratio = median(modes[0].total) / median(tp);
    run.storm_grouped_ratio = median(modes[1].total) / median(tp);
  }
  if (run.rank == 0) print_storm(run, modes, tp, packed_wrong);
}

void device_latency(DeviceRun& run) {
  CudaRig& rig = run.rig;
  const int64_t n = 1024;  // 4 KiB of float32
  auto in = rig.device_floats(n), out = rig.device_floats(n);
  rig.fill_inputs(in.get(), n, run.rank, 0);
  rig.synchronize();
  const auto vin = device_view(rig, in.get(), n), vout = device_view(rig, out.get(), n);
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  std::vector<double> chorus_us, nccl_us;
  for (int it = -10; it < run.settings.latency_iters; ++it) {  // negative: warm-up
    line_up(run.size);
    const double t0 = now_seconds();
    chorus::allreduce_async("latency", vin, vout, sum).wait();
    const double c = now_seconds() - t0;
    const double m = run.reference ? timed_raw_allreduce(run, in.get(), out.get(), n) : 0;
    if (it >= 0) {
      chorus_us.push_back(c * 1e6);
      nccl_us.push_back(m * 1e6);
    }
  }
  // The last result was NCCL's: Chorus's once more, checked.
  rig.zero(out.get(), n);
  chorus::allreduce_async("latency", vin, vout, sum).wait();
  const int64_t wrong = sum_over_ranks(rig.count_wrong(out.get(), n, run.size, 0));
  run.wrong += wrong;
  run.latency_over_us = median(chorus_us) - median(nccl_us);
  run.latency_measured = run.reference;
  if (run.rank != 0) return;
  std::printf("\n# latency: one 4 KiB float32 sum allreduce on the device, %d iterations, rank 0's times\n",
              run.settings.latency_iters);
  std::printf("%-40s median %8.1f us   p99 %8.1f us   #wrong %lld\n", "chorus (enqueue..wait, whole runtime)",
              median(chorus_us), quantile(chorus_us, 0.99), (long long)wrong);
  if (run.reference) {
    std::printf("%-40s median %8.1f us   p99 %8.1f us\n", "ncclAllReduce (launch..synchronized)", median(nccl_us),
                quantile(nccl_us, 0.99));
  }
  std::fflush(stdout);
}

}  // namespace bench
