#pragma once
// Shared pieces of the collective benchmark: command-line settings,
// timing, order statistics, and the Chorus tensor views it reduces.
// No MPI and no CUDA here: host sections (sweep.cc, storm.cc, latency.cc)
// use MPI as their reference, the device ones (device_*.cc) raw NCCL.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <chorus/chorus.h>

namespace bench {

struct Settings {
  /// "cpu": host buffers against MPI; "cuda": device buffers against NCCL.
  std::string device = "cpu";
  int64_t min_bytes = 0;    ///< 0: 4 KiB on the CPU, 1 MiB on CUDA (the issue's sweep)
  int64_t max_bytes = 256ll << 20;
  int iters = 0;            ///< 0: chosen per size
  int storm_tensors = 200;
  int64_t storm_bytes = 16 << 10;
  int storm_rounds = 30;
  int latency_iters = 2000;
  double idle_seconds = 2.0;
  /// What lines the ranks up before each timed latency call: "mpi"
  /// (MPI_Barrier) or "chorus" (a one-element Chorus allreduce).
  std::string latency_barrier = "mpi";
  std::vector<std::string> sections = {"sweep", "storm", "latency"};
  /// The sweep's buffers: "heap" (ordinary memory), "shared" (from
  /// chorus::allocate_shared_host, reduced where they lie) or "both".
  std::string buffers = "both";

  bool wants(const std::string& section) const {
    return std::find(sections.begin(), sections.end(), section) != sections.end();
  }
};

/// Parses argv; prints usage and exits on bad input.
Settings parse_settings(int argc, char** argv);

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The q-quantile (0..1) of `v` (copied, sorted).
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}
inline double median(const std::vector<double>& v) { return quantile(v, 0.5); }

inline std::shared_ptr<chorus::HostTensorView> f32_view(float* data, int64_t n) {
  return std::make_shared<chorus::HostTensorView>(data, chorus::DataType::kFloat32, chorus::TensorShape{n});
}

/// Rank r's element i: small integers, so float sums are exact in any order.
inline float exact_input(int rank, int64_t i) { return static_cast<float>(i % 7 + rank); }
inline float exact_sum(int size, int64_t i) {
  return static_cast<float>(size * (i % 7) + size * (size - 1) / 2);
}

/// Number of elements of `out` that differ from exact_sum.
int64_t count_wrong(const float* out, int64_t n, int size);

void run_sweep(const Settings& s);
void run_storm(const Settings& s);
void run_latency(const Settings& s);

/// --device cuda (device_main.cc): the whole run, no MPI; the exit status
/// (77: no CUDA device, 1: a wrong result).
int run_device_benchmark(const Settings& s);

}  // namespace bench
