// Latency of one small allreduce through the whole runtime (enqueue to
// completed wait), median and p99; then what an idle rank costs: the
// process's CPU time while the program sleeps with Chorus initialized
// (only the background thread runs then).
#include <sys/resource.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "mpi_timing.h"

namespace bench {

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Lines the ranks up before a timed Chorus call (MPI_Allreduce always
// follows MPI_Barrier). MPI_Barrier over Open MPI's TCP transport lets the
// ranks go up to milliseconds apart (the first one out would time the wait
// for the last); a Chorus allreduce of one element releases them about one
// message apart.
class StartLine {
 public:
  explicit StartLine(const Settings& s) : chorus_(s.latency_barrier == "chorus"), view_(f32_view(&value_, 1)) {}
  void wait() {
    if (!chorus_) {
      MPI_Barrier(MPI_COMM_WORLD);
      return;
    }
    chorus::allreduce_async("latency.start", view_, view_, sum_).wait();
  }

 private:
  const bool chorus_;
  float value_ = 0;
  std::shared_ptr<chorus::HostTensorView> view_;
  chorus::AllreduceOptions sum_ = [] {
    chorus::AllreduceOptions o;
    o.op = chorus::ReduceOp::kSum;
    return o;
  }();
};

}  // namespace

void run_latency(const Settings& s) {
  const int rank = chorus::rank();
  const int64_t n = 1024;  // 4 KiB of float32
  std::vector<float> in(n), out(n);
  for (int64_t i = 0; i < n; ++i) in[static_cast<size_t>(i)] = exact_input(rank, i);
  auto vin = f32_view(in.data(), n), vout = f32_view(out.data(), n);
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;

  std::vector<double> chorus_us, mpi_us;
  StartLine start(s);
  for (int it = -10; it < s.latency_iters; ++it) {  // negative: warm-up
    start.wait();
    double t0 = now_seconds();
    chorus::allreduce_async("latency", vin, vout, sum).wait();
    const double c = now_seconds() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_seconds();
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double m = now_seconds() - t0;
    if (it >= 0) {
      chorus_us.push_back(c * 1e6);
      mpi_us.push_back(m * 1e6);
    }
  }

  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu0 = cpu_seconds(), wall0 = now_seconds();
  std::this_thread::sleep_for(std::chrono::duration<double>(s.idle_seconds));
  const double idle_share = (cpu_seconds() - cpu0) / (now_seconds() - wall0);
  double worst_idle = 0;
  MPI_Reduce(&idle_share, &worst_idle, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  if (rank == 0) {
    std::printf("\n# latency: one 4 KiB float32 sum allreduce, %d iterations, rank 0's times, each after %s\n",
                s.latency_iters,
                s.latency_barrier == "chorus" ? "a one-element Chorus allreduce (MPI's: MPI_Barrier)" : "MPI_Barrier");
    std::printf("%-36s median %8.1f us   p99 %8.1f us\n", "chorus (enqueue..wait, whole runtime)",
                median(chorus_us), quantile(chorus_us, 0.99));
    std::printf("%-36s median %8.1f us   p99 %8.1f us\n", "MPI_Allreduce", median(mpi_us), quantile(mpi_us, 0.99));
    std::printf("# idle: %.1f s asleep with Chorus running: busiest rank used %.2f%% of a core\n",
                s.idle_seconds, 100.0 * worst_idle);
    std::fflush(stdout);
  }
}

}  // namespace bench
