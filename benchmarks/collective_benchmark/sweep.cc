// Size sweep: one float32 sum allreduce per size through the whole Chorus
// runtime (enqueue to completed wait), then raw MPI_Allreduce on the same
// buffers. Reports time, algbw, busbw = algbw * 2(n-1)/n, #wrong, ratio.
// Once on ordinary heap buffers, once on buffers from
// chorus::allocate_shared_host (which Chorus reduces where they lie).
#include <cstdio>
#include <algorithm>
#include <memory>
#include <vector>

#include "bench_util.h"
#include "mpi_timing.h"

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
Timing measure(int iters, Run&& run, const float* out, int64_t n, int size) {
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
  t.wrong = count_wrong(out, n, size);
  return t;
}


// Two buffers of `n` floats: on the heap, or from the shared-memory arena.
class SweepBuffers {
 public:
  SweepBuffers(int64_t n, bool shared) {
    if (shared) {
      in_mem_ = chorus::allocate_shared_host(n * 4);
      out_mem_ = chorus::allocate_shared_host(n * 4);
      in_ = static_cast<float*>(in_mem_.get());
      out_ = static_cast<float*>(out_mem_.get());
      in_arena_ = chorus::runtime().in_shared_host(in_, n * 4) && chorus::runtime().in_shared_host(out_, n * 4);
    } else {
      in_heap_.resize(static_cast<size_t>(n));
      out_heap_.resize(static_cast<size_t>(n));
      in_ = in_heap_.data();
      out_ = out_heap_.data();
    }
  }
  float* in() const { return in_; }
  float* out() const { return out_; }
  bool in_arena() const { return in_arena_; }

 private:
  std::shared_ptr<void> in_mem_, out_mem_;
  std::vector<float> in_heap_, out_heap_;
  float* in_ = nullptr;
  float* out_ = nullptr;
  bool in_arena_ = false;
};

void sweep_table(const Settings& s, bool shared) {
  const int rank = chorus::rank(), size = chorus::size();
  const double bus_factor = size > 1 ? 2.0 * (size - 1) / size : 1.0;
  if (rank == 0) {
    std::printf("\n# sweep: float32 sum, out of place, %s; chorus = enqueue..wait through the runtime\n",
                shared ? "buffers from chorus::allocate_shared_host" : "heap buffers");
    // On shared buffers MPI also runs on heap ones of the same size (it may
    // prefer those): the speedup is over the faster of its two.
    std::printf("%12s %10s | %10s %9s %9s %7s | %10s %9s %9s %7s |%s %7s\n", "bytes", "elements",
                "chorus us", "algbw", "busbw", "#wrong", "mpi us", "algbw", "busbw", "#wrong",
                shared ? " mpi heap us |" : "", "speedup");
  }
  for (int64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const SweepBuffers buffers(n, shared);
    float* in = buffers.in();
    float* out = buffers.out();
    if (shared && !buffers.in_arena() && rank == 0) {
      std::printf("# (%lld bytes: the arena gave ordinary memory; see the warning above)\n", (long long)bytes);
    }
    for (int64_t i = 0; i < n; ++i) in[i] = exact_input(rank, i);
    std::fill(out, out + n, 0.0f);  // touched before timing, like the heap buffers
    const int iters = iterations_for(s, bytes);
    auto vin = f32_view(in, n), vout = f32_view(out, n);
    chorus::AllreduceOptions sum;
    sum.op = chorus::ReduceOp::kSum;
    const std::string name = "sweep." + std::to_string(bytes);

    const Timing c = measure(iters, [&] { chorus::allreduce_async(name, vin, vout, sum).wait(); }, out, n, size);
    std::fill(out, out + n, 0.0f);
    const Timing m = measure(iters, [&] {
      MPI_Allreduce(in, out, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }, out, n, size);
    Timing mh;
    if (shared) {
      const SweepBuffers heap(n, false);
      for (int64_t i = 0; i < n; ++i) heap.in()[i] = exact_input(rank, i);
      mh = measure(iters, [&] {
        MPI_Allreduce(heap.in(), heap.out(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }, heap.out(), n, size);
    }

    int64_t wrong[3] = {c.wrong, m.wrong, mh.wrong}, total_wrong[3] = {0, 0, 0};
    MPI_Reduce(wrong, total_wrong, 3, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double calg = bytes / c.seconds / 1e9, malg = bytes / m.seconds / 1e9;
      const double mpi_best = shared ? std::min(m.seconds, mh.seconds) : m.seconds;
      char heap_column[32] = "";
      if (shared) std::snprintf(heap_column, sizeof(heap_column), " %11.1f |", mh.seconds * 1e6);
      std::printf("%12lld %10lld | %10.1f %9.3f %9.3f %7lld | %10.1f %9.3f %9.3f %7lld |%s %6.2fx\n",
                  (long long)bytes, (long long)n, c.seconds * 1e6, calg, calg * bus_factor,
                  (long long)total_wrong[0], m.seconds * 1e6, malg, malg * bus_factor,
                  (long long)(total_wrong[1] + total_wrong[2]), heap_column, mpi_best / c.seconds);
      std::fflush(stdout);
    }
  }
}

}  // namespace

void run_sweep(const Settings& s) {
  if (s.buffers != "shared") sweep_table(s, false);
  if (s.buffers != "heap") sweep_table(s, true);
}

}  // namespace bench
