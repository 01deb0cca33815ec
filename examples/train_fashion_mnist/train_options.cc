#include "train_options.h"

#include <stdexcept>

#include <boost/program_options.hpp>

#include "last_flag_wins.h"

namespace chorus_examples {

namespace po = boost::program_options;

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

std::optional<TrainOptions> parse_train_options(int argc, char** argv) {
  TrainOptions o;
  po::options_description desc(
      "train_fashion_mnist: data-parallel Fashion-MNIST training with Chorus\n"
      "usage: chorusrun -np N train_fashion_mnist [options]\noptions");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help")
    ("epochs", po::value(&o.epochs)->default_value(o.epochs), "epochs to train (in total, counting resumed ones)")
    ("batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "images per rank and step")
    ("lr", po::value(&o.lr)->default_value(o.lr), "learning rate per rank; SGD gets lr x number of ranks")
    ("momentum", po::value(&o.momentum)->default_value(o.momentum, "0.9"), "SGD momentum")
    ("batches-per-allreduce", po::value(&o.batches_per_allreduce)->default_value(o.batches_per_allreduce),
       "backward passes accumulated locally per allreduce and optimizer step")
    ("compression", po::value(&o.compression)->default_value(o.compression), "gradient allreduce: none, fp16, bf16")
    ("checkpoint", po::value(&o.checkpoint), "rank 0 writes a checkpoint here after every epoch")
    ("resume", po::bool_switch(&o.resume), "start from --checkpoint (model, optimizer, epoch)")
    ("data-dir", po::value(&o.data_dir)->default_value(o.data_dir), "directory with the Fashion-MNIST IDX files")
    ("threads", po::value(&o.threads)->default_value(o.threads), "torch compute threads per rank")
    ("max-steps-per-epoch", po::value(&o.max_steps_per_epoch)->default_value(o.max_steps_per_epoch),
       "stop each epoch after this many batches (0: whole epoch); for quick tests")
    ("log-interval", po::value(&o.log_interval)->default_value(o.log_interval), "steps between progress lines")
    ("seed", po::value(&o.seed)->default_value(o.seed), "random seed (initial weights, dropout, shuffling)")
    ("min-accuracy", po::value(&o.min_accuracy)->default_value(o.min_accuracy),
       "exit with code 1 if the final test accuracy is below this (0: no check)");
  // clang-format on
  if (!parse_flags(desc, argc, argv)) return std::nullopt;
  require(o.epochs >= 1, "--epochs must be at least 1");
  require(o.batch_size >= 1, "--batch-size must be at least 1");
  require(o.lr > 0, "--lr must be positive");
  require(o.momentum >= 0 && o.momentum < 1, "--momentum must be in [0, 1)");
  require(o.batches_per_allreduce >= 1, "--batches-per-allreduce must be at least 1");
  require(o.compression == "none" || o.compression == "fp16" || o.compression == "bf16",
          "--compression must be none, fp16 or bf16, not '" + o.compression + "'");
  require(!o.resume || !o.checkpoint.empty(), "--resume needs --checkpoint PATH");
  require(o.threads >= 1, "--threads must be at least 1");
  require(o.max_steps_per_epoch >= 0, "--max-steps-per-epoch must be 0 (whole epoch) or positive");
  require(o.max_steps_per_epoch == 0 || o.max_steps_per_epoch >= o.batches_per_allreduce,
          "--max-steps-per-epoch must be at least --batches-per-allreduce");
  require(o.log_interval >= 1, "--log-interval must be at least 1");
  require(o.min_accuracy >= 0 && o.min_accuracy <= 1, "--min-accuracy must be in [0, 1]");
  return o;
}

}  // namespace chorus_examples
