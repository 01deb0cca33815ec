#include "benchmark_options.h"

#include <stdexcept>

#include <boost/program_options.hpp>

#include "last_flag_wins.h"

namespace chorus_examples {

namespace po = boost::program_options;

std::optional<BenchmarkOptions> parse_benchmark_options(int argc, char** argv) {
  BenchmarkOptions o;
  po::options_description desc(
      "synthetic_benchmark: ResNet-18 training throughput with Chorus (Horovod's pytorch_synthetic_benchmark)\n"
      "usage: chorusrun -np N synthetic_benchmark [options]\noptions");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help")
    ("batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "images per rank and backward pass")
    ("num-warmup-batches", po::value(&o.num_warmup_batches)->default_value(o.num_warmup_batches),
       "untimed steps before the benchmark")
    ("num-batches-per-iter", po::value(&o.num_batches_per_iter)->default_value(o.num_batches_per_iter),
       "steps per timed iteration")
    ("num-iters", po::value(&o.num_iters)->default_value(o.num_iters), "timed iterations")
    ("batches-per-allreduce", po::value(&o.batches_per_allreduce)->default_value(o.batches_per_allreduce),
       "backward passes accumulated locally per allreduce and optimizer step")
    ("fp16-allreduce", po::bool_switch(&o.fp16_allreduce), "send gradients as float16")
    ("no-flat-gradients", po::bool_switch(&o.no_flat_gradients),
     "keep one allocation per gradient (fused allreduces copy through the fusion buffer)")
    ("lr", po::value(&o.lr)->default_value(o.lr), "learning rate per rank; SGD gets lr x number of ranks")
    ("threads", po::value(&o.threads)->default_value(o.threads), "torch compute threads per rank")
    ("data-dir", po::value(&o.data_dir),
       "train on CIFAR-10 (binary version: data_batch_1..5.bin) from here instead of random inputs")
    ("seed", po::value(&o.seed)->default_value(o.seed), "random seed (weights, inputs)");
  // clang-format on
  if (!parse_flags(desc, argc, argv)) return std::nullopt;
  auto require = [](bool ok, const char* message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(o.batch_size >= 1, "--batch-size must be at least 1");
  require(o.num_warmup_batches >= 0, "--num-warmup-batches must not be negative");
  require(o.num_batches_per_iter >= 1, "--num-batches-per-iter must be at least 1");
  require(o.num_iters >= 1, "--num-iters must be at least 1");
  require(o.batches_per_allreduce >= 1, "--batches-per-allreduce must be at least 1");
  require(o.lr > 0, "--lr must be positive");
  require(o.threads >= 1, "--threads must be at least 1");
  return o;
}

}  // namespace chorus_examples
