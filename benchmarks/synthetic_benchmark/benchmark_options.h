#pragma once
/// \file benchmark_options.h
/// Command line of synthetic_benchmark (the flags of Horovod's
/// pytorch_synthetic_benchmark). No torch here, so it compiles fast.

#include <cstdint>
#include <optional>
#include <string>

namespace chorus_examples {

struct BenchmarkOptions {
  int64_t batch_size = 32;  ///< per rank
  int64_t num_warmup_batches = 10;
  int64_t num_batches_per_iter = 10;
  int64_t num_iters = 10;
  int64_t batches_per_allreduce = 1;
  bool fp16_allreduce = false;
  bool no_flat_gradients = false;
  double lr = 0.01;  ///< per rank; SGD gets lr x size
  int64_t threads = 1;
  std::string data_dir;  ///< empty: random inputs; else CIFAR-10 binary files
  uint64_t seed = 42;
};

/// Parses argv. Returns nullopt after printing the help for --help; throws
/// std::invalid_argument with a one-line message for bad input.
std::optional<BenchmarkOptions> parse_benchmark_options(int argc, char** argv);

}  // namespace chorus_examples
