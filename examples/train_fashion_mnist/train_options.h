#pragma once
/// \file train_options.h
/// Command line of train_fashion_mnist. No torch here, so it compiles fast.

#include <cstdint>
#include <optional>
#include <string>

namespace chorus_examples {

struct TrainOptions {
  int64_t epochs = 3;
  int64_t batch_size = 64;          ///< per rank
  double lr = 0.01;                 ///< per rank; the optimizer gets lr x size
  double momentum = 0.9;
  int64_t batches_per_allreduce = 1;
  std::string compression = "none";  ///< none, fp16, bf16
  std::string checkpoint;            ///< empty: no checkpoints
  bool resume = false;
  /// Where Debian's dataset-fashion-mnist installs the files.
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t threads = 1;
  int64_t max_steps_per_epoch = 0;  ///< 0: the whole epoch
  int64_t log_interval = 50;
  uint64_t seed = 42;
  double min_accuracy = 0.0;  ///< > 0: exit 1 when the final accuracy is lower
};

/// Parses argv. Returns nullopt after printing the help for --help; throws
/// std::invalid_argument with a one-line message for bad input.
std::optional<TrainOptions> parse_train_options(int argc, char** argv);

}  // namespace chorus_examples
