// The storm: many small gradients at once, as a backward pass produces them.
// Chorus (all enqueued asynchronously, negotiated and fused) against the
// same tensors as separate MPI_Allreduce calls, and against one
// MPI_Allreduce of all of them packed by hand into one buffer (the packing
// copies not counted: the floor Chorus's fusion aims at).
#include <cstdio>
#include <vector>

#include "bench_util.h"
#include "mpi_timing.h"

namespace bench {

namespace {

// Rank 0 prints the medians of the three methods, per round.
void print_storm(const Settings& s, double chorus_s, double separate_s, double packed_s, double calls,
                 double enqueue_s, const int64_t wrong[2]) {
  std::printf("\n# storm: %d tensors x %lld bytes float32 sum per round, %d rounds, medians\n", s.storm_tensors,
              (long long)s.storm_bytes, s.storm_rounds);
  std::printf("%-42s %10.3f ms  (%.1f data-plane calls per round, enqueue %.3f ms, #wrong %lld)\n",
              "chorus, async + fused", chorus_s * 1e3, calls, enqueue_s * 1e3, (long long)wrong[0]);
  std::printf("%-42s %10.3f ms  (chorus / this = %.3f, #wrong %lld)\n", "MPI_Allreduce x separate calls",
              separate_s * 1e3, chorus_s / separate_s, (long long)wrong[1]);
  std::printf("%-42s %10.3f ms  (chorus / this = %.3f)\n", "MPI_Allreduce x 1, packed by hand", packed_s * 1e3,
              chorus_s / packed_s);
  std::fflush(stdout);
}

}  // namespace

void run_storm(const Settings& s) {
  const int rank = chorus::rank(), size = chorus::size();
  const int count = s.storm_tensors;
  const int64_t n = s.storm_bytes / 4;
  std::vector<std::vector<float>> in(static_cast<size_t>(count)), out(in.size());
  std::vector<std::shared_ptr<chorus::HostTensorView>> vin, vout;
  for (int t = 0; t < count; ++t) {
    in[t].resize(static_cast<size_t>(n));
    out[t].resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) in[t][static_cast<size_t>(i)] = exact_input(rank, i + t);
    vin.push_back(f32_view(in[t].data(), n));
    vout.push_back(f32_view(out[t].data(), n));
  }
  std::vector<float> packed_in(static_cast<size_t>(n * count)), packed_out(packed_in.size());
  for (int t = 0; t < count; ++t) std::copy(in[t].begin(), in[t].end(), packed_in.begin() + t * n);
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;

  std::vector<std::string> names;
  for (int t = 0; t < count; ++t) names.push_back("storm." + std::to_string(t));
  std::vector<double> enqueue_seconds;  // how long the framework thread spends enqueuing
  auto run_chorus = [&] {
    std::vector<chorus::Handle> handles;
    handles.reserve(static_cast<size_t>(count));
    const double t0 = now_seconds();
    for (int t = 0; t < count; ++t) handles.push_back(chorus::allreduce_async(names[t], vin[t], vout[t], sum));
    enqueue_seconds.push_back(now_seconds() - t0);
    for (auto& h : handles) h.wait();
  };
  auto run_separate = [&] {
    for (int t = 0; t < count; ++t) {
      MPI_Allreduce(in[t].data(), out[t].data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
  };
  auto run_packed = [&] {
    MPI_Allreduce(packed_in.data(), packed_out.data(), static_cast<int>(n * count), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  };
  auto wrong_in_out = [&] {
    int64_t wrong = 0;
    for (int t = 0; t < count; ++t) {
      for (int64_t i = 0; i < n; ++i) wrong += out[t][static_cast<size_t>(i)] != exact_sum(size, i + t);
    }
    for (auto& o : out) std::fill(o.begin(), o.end(), 0.0f);
    return wrong;
  };

  const chorus::RuntimeStats before = chorus::runtime().stats();
  // Interleaved rounds: all three methods see the same machine load.
  std::vector<double> tc, ts, tp;
  int64_t wrong_chorus = 0, wrong_separate = 0;
  for (int round = -1; round < s.storm_rounds; ++round) {  // round -1: warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_seconds();
    run_chorus();
    const double c = slowest_rank(now_seconds() - t0);
    wrong_chorus += wrong_in_out();
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_seconds();
    run_separate();
    const double sep = slowest_rank(now_seconds() - t0);
    wrong_separate += wrong_in_out();
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_seconds();
    run_packed();
    const double p = slowest_rank(now_seconds() - t0);
    if (round >= 0) {
      tc.push_back(c);
      ts.push_back(sep);
      tp.push_back(p);
    }
  }
  const chorus::RuntimeStats after = chorus::runtime().stats();
  int64_t wrong[2] = {wrong_chorus, wrong_separate}, total[2] = {0, 0};
  MPI_Reduce(wrong, total, 2, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    const double calls = double(after.allreduce_ops - before.allreduce_ops) / (s.storm_rounds + 1);
    print_storm(s, median(tc), median(ts), median(tp), calls, median(enqueue_seconds), total);
  }
}

}  // namespace bench
