// Collective benchmark in the spirit of nccl-tests: Chorus against raw MPI
// (--device cpu, host buffers) or raw ncclAllReduce (--device cuda, device
// buffers) on the same buffers, in the same run, so ratios hold on a noisy
// machine.
//   chorusrun -np 2 ./collective_benchmark [--sections sweep,storm,latency] ...
//   ./collective_benchmark --device cuda      (one rank, no launcher, no MPI)
// See docs/performance.md for what each section measures and the results.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "bench_util.h"
#if BENCH_HAVE_MPI
#include "mpi_timing.h"
#endif

namespace bench {

namespace {

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "collective_benchmark: %s\n", why);
  std::fprintf(stderr,
               "usage: collective_benchmark [--device cpu|cuda] [--sections sweep,storm,latency]\n"
               "         [--min-bytes N] [--max-bytes N]\n"
               "         [--iters N] [--storm-tensors N] [--storm-bytes N] [--storm-rounds N]\n"
               "         [--latency-iters N] [--latency-barrier mpi|chorus] [--idle-seconds S]\n"
               "         [--buffers heap|shared|both]\n");
  std::exit(2);
}

int64_t parse_positive(const char* flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v <= 0) {
    std::fprintf(stderr, "collective_benchmark: %s expects a positive whole number, got '%s'\n", flag, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

Settings parse_settings(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (!std::strcmp(flag, "--help") || !std::strcmp(flag, "-h")) usage(nullptr);
    if (i + 1 >= argc) usage((std::string(flag) + " needs a value (or is unknown)").c_str());
    const char* value = argv[++i];
    if (!std::strcmp(flag, "--device")) {
      s.device = value;
      if (s.device != "cpu" && s.device != "cuda") {
        usage(("--device expects cpu or cuda, got '" + s.device + "'").c_str());
      }
    } else if (!std::strcmp(flag, "--sections")) {
      s.sections.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');) {
        if (part != "sweep" && part != "storm" && part != "latency") usage(("unknown section '" + part + "'").c_str());
        s.sections.push_back(part);
      }
    } else if (!std::strcmp(flag, "--min-bytes")) s.min_bytes = parse_positive(flag, value);
    else if (!std::strcmp(flag, "--max-bytes")) s.max_bytes = parse_positive(flag, value);
    else if (!std::strcmp(flag, "--iters")) s.iters = static_cast<int>(parse_positive(flag, value));
    else if (!std::strcmp(flag, "--storm-tensors")) s.storm_tensors = static_cast<int>(parse_positive(flag, value));
    else if (!std::strcmp(flag, "--storm-bytes")) s.storm_bytes = parse_positive(flag, value);
    else if (!std::strcmp(flag, "--storm-rounds")) s.storm_rounds = static_cast<int>(parse_positive(flag, value));
    else if (!std::strcmp(flag, "--latency-iters")) s.latency_iters = static_cast<int>(parse_positive(flag, value));
    else if (!std::strcmp(flag, "--latency-barrier")) {
      s.latency_barrier = value;
      if (s.latency_barrier != "mpi" && s.latency_barrier != "chorus") {
        usage(("--latency-barrier expects mpi or chorus, got '" + s.latency_barrier + "'").c_str());
      }
    } else if (!std::strcmp(flag, "--idle-seconds")) s.idle_seconds = static_cast<double>(parse_positive(flag, value));
    else if (!std::strcmp(flag, "--buffers")) {
      s.buffers = value;
      if (s.buffers != "heap" && s.buffers != "shared" && s.buffers != "both") {
        usage(("--buffers expects heap, shared or both, got '" + s.buffers + "'").c_str());
      }
    } else usage((std::string("unknown flag ") + flag).c_str());
  }
  for (const int64_t bytes : {s.min_bytes, s.max_bytes, s.storm_bytes}) {
    if (bytes % 4 != 0) usage(("sizes are in bytes of float32 elements: " + std::to_string(bytes) +
                               " is not a multiple of 4").c_str());
  }
  if (s.min_bytes == 0) s.min_bytes = std::min<int64_t>(s.max_bytes, s.device == "cuda" ? 1 << 20 : 4 << 10);
  if (s.min_bytes > s.max_bytes) usage("--min-bytes is larger than --max-bytes");
  return s;
}

int64_t count_wrong(const float* out, int64_t n, int size) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += out[i] != exact_sum(size, i);
  return wrong;
}

}  // namespace bench

int main(int argc, char** argv) {
  const bench::Settings settings = bench::parse_settings(argc, argv);
  if (settings.device == "cuda") {
#if BENCH_HAVE_CUDA
    return bench::run_device_benchmark(settings);
#else
    std::fprintf(stderr, "collective_benchmark: --device cuda, but Chorus was built without CUDA (CHORUS_WITH_CUDA)\n");
    return 2;
#endif
  }
#if BENCH_HAVE_MPI
  // The benchmark calls MPI from the main thread while Chorus's background
  // thread polls its own communicators: that needs MPI_THREAD_MULTIPLE.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "collective_benchmark: MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  chorus::init();
  if (chorus::rank() == 0) {
    std::printf("# Chorus %s collective benchmark, %d ranks\n", chorus::version(), chorus::size());
  }
  if (settings.wants("sweep")) bench::run_sweep(settings);
  if (settings.wants("storm")) bench::run_storm(settings);
  if (settings.wants("latency")) bench::run_latency(settings);
  chorus::shutdown();
  MPI_Finalize();
  return 0;
#else
  std::fprintf(stderr, "collective_benchmark: --device cpu compares against MPI, and Chorus was built without MPI "
                       "(CHORUS_WITH_MPI=OFF); use --device cuda\n");
  return 2;
#endif
}
