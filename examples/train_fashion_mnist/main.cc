// train_fashion_mnist: the README's main job. A small CNN trained
// data-parallel on Fashion-MNIST with Chorus: every rank reads its own part
// of each epoch, gradients are averaged by chorus::DistributedOptimizer, and
// the test accuracy is computed by all ranks together.
//
//   chorusrun -np 2 ./train_fashion_mnist --epochs 3 --checkpoint /tmp/fm.pt

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <torch/data.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <chorus/torch.h>

#include "checkpoint.h"
#include "guarded_main.h"
#include "evaluate.h"
#include "fashion_mnist.h"
#include "model.h"
#include "train_options.h"

namespace ce = chorus_examples;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Batches this rank runs in one epoch: the same on every rank (the sampler
// gives every rank ceil(N / size) indices), capped by --max-steps-per-epoch
// and cut to whole groups of --batches-per-allreduce, so no step ever
// starts with a partial accumulation.
int64_t steps_per_epoch(const ce::TrainOptions& o, size_t dataset_size) {
  const int64_t per_rank = (static_cast<int64_t>(dataset_size) + chorus::size() - 1) / chorus::size();
  int64_t steps = (per_rank + o.batch_size - 1) / o.batch_size;
  if (o.max_steps_per_epoch > 0) steps = std::min(steps, o.max_steps_per_epoch);
  steps -= steps % o.batches_per_allreduce;
  if (steps == 0) throw std::invalid_argument("--batch-size x --batches-per-allreduce is larger than an epoch");
  return steps;
}

// Runs one epoch; returns rank 0's mean training loss (printed only).
double train_epoch(const ce::TrainOptions& o, int64_t epoch, ce::FashionNet& model, ce::FashionMnist& train,
                   chorus::DistributedOptimizer& optimizer) {
  const bool log = chorus::rank() == 0;
  const int64_t steps = steps_per_epoch(o, *train.size());

  // A fresh sampler per epoch: the data loader keeps its own copy, and
  // set_epoch reshuffles identically on every rank so the shards stay disjoint.
  torch::data::samplers::DistributedRandomSampler sampler(*train.size(), chorus::size(), chorus::rank());
  sampler.set_epoch(static_cast<size_t>(epoch));
  // workers(0): batches are assembled on this thread; the rank has one core.
  auto loader = torch::data::make_data_loader(train.map(torch::data::transforms::Stack<>()), std::move(sampler),
                                              torch::data::DataLoaderOptions(o.batch_size).workers(0));

  model->train();
  double loss_sum = 0, interval_loss = 0;
  int64_t step = 0, interval_images = 0;
  auto interval_start = Clock::now();
  for (auto& batch : *loader) {
    if (step == steps) break;
    auto loss = torch::nn::functional::cross_entropy(model->forward(batch.data), batch.target);
    loss.backward();
    ++step;
    if (step % o.batches_per_allreduce == 0) {
      optimizer.step();  // waits for the allreduced gradients
      optimizer.zero_grad();
    }
    const double l = loss.item<double>();
    loss_sum += l;
    interval_loss += l;
    interval_images += batch.data.size(0);
    if (log && (step % o.log_interval == 0 || step == steps)) {
      const int64_t in_interval = (step - 1) % o.log_interval + 1;
      // Every rank processes as many images as this one, in lockstep.
      const double imgs_per_sec = interval_images * chorus::size() / seconds_since(interval_start);
      std::printf("epoch %lld/%lld step %lld/%lld loss %.4f images/s %.0f\n", static_cast<long long>(epoch + 1),
                  static_cast<long long>(o.epochs), static_cast<long long>(step), static_cast<long long>(steps),
                  interval_loss / in_interval, imgs_per_sec);
      std::fflush(stdout);
      interval_loss = 0;
      interval_images = 0;
      interval_start = Clock::now();
    }
  }
  return loss_sum / static_cast<double>(step);
}

// Every rank's model and optimizer state at the start: the checkpoint's
// (--resume) or rank 0's fresh ones. Returns the epochs already done.
int64_t starting_state(const ce::TrainOptions& o, double lr, ce::FashionNet& model, torch::optim::SGD& sgd) {
  if (!o.resume) {
    chorus::broadcast_parameters(*model, 0);
    chorus::broadcast_optimizer_state(sgd, 0);
    return 0;
  }
  const int64_t epochs_done = ce::resume_from_checkpoint(o.checkpoint, *model, sgd, 0);
  // The flags win over the checkpoint's learning rate: it may come from a
  // run with another number of ranks.
  for (auto& group : sgd.param_groups()) group.options().set_lr(lr);
  return epochs_done;
}

// The last line counts the epochs the model has had: a checkpoint may
// already hold more than --epochs asks for.
void print_final_line(const ce::TrainOptions& o, int64_t first_epoch, double accuracy, double seconds) {
  if (first_epoch >= o.epochs) {
    std::printf("nothing to train: the checkpoint holds %lld epochs, --epochs is %lld\n",
                static_cast<long long>(first_epoch), static_cast<long long>(o.epochs));
  }
  std::printf("final test accuracy %.4f after %lld epochs, %.1f s wall time\n", accuracy,
              static_cast<long long>(std::max(first_epoch, o.epochs)), seconds);
  std::fflush(stdout);
}

// `rank` is set once known, for error messages after a shutdown.
int run(const ce::TrainOptions& o, int* rank_out) {
  const auto start = Clock::now();
  torch::set_num_threads(static_cast<int>(o.threads));
  chorus::init();
  *rank_out = chorus::rank();
  const int rank = chorus::rank(), size = chorus::size();
  const bool log = rank == 0;
  torch::manual_seed(o.seed);
  // Before any training: a checkpoint that cannot be written fails now, on
  // every rank, not after the first epoch.
  if (!o.checkpoint.empty()) ce::require_checkpoint_writable(o.checkpoint, 0);

  ce::FashionMnist train(o.data_dir, ce::FashionMnist::Split::kTrain);
  ce::FashionMnist test(o.data_dir, ce::FashionMnist::Split::kTest);

  ce::FashionNet model;
  // Linear scaling rule: size ranks x batch B behave like one batch of size x B.
  const double lr = o.lr * size;
  auto sgd = std::make_shared<torch::optim::SGD>(model->parameters(),
                                                 torch::optim::SGDOptions(lr).momentum(o.momentum));
  const int64_t first_epoch = starting_state(o, lr, model, *sgd);

  // Wrapped only now: its gradient hooks must be installed after the
  // checkpoint was loaded into the parameters (see resume_from_checkpoint).
  chorus::DistributedOptimizerOptions dist_options;
  dist_options.compression = chorus::Compression::from_name(o.compression);
  dist_options.backward_passes_per_step = static_cast<int>(o.batches_per_allreduce);
  chorus::DistributedOptimizer optimizer(sgd, model->named_parameters(), dist_options);

  if (log) {
    std::printf("train_fashion_mnist: %d ranks x %lld threads, batch %lld per rank, lr %g (%g x %d), "
                "%lld batches per allreduce, compression %s, %lld train / %lld test images\n",
                size, static_cast<long long>(o.threads), static_cast<long long>(o.batch_size), lr, o.lr, size,
                static_cast<long long>(o.batches_per_allreduce), o.compression.c_str(),
                static_cast<long long>(*train.size()), static_cast<long long>(*test.size()));
  }

  double accuracy = -1;
  if (o.resume) {
    const ce::Accuracy resumed = ce::evaluate(model, test);
    accuracy = resumed.fraction();
    if (log) {
      std::printf("resumed from %s after epoch %lld: test accuracy %.4f (%lld/%lld)\n", o.checkpoint.c_str(),
                  static_cast<long long>(first_epoch), accuracy, static_cast<long long>(resumed.correct),
                  static_cast<long long>(resumed.total));
    }
  }

  for (int64_t epoch = first_epoch; epoch < o.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    const double train_loss = train_epoch(o, epoch, model, train, optimizer);
    const double train_seconds = seconds_since(epoch_start);
    const ce::Accuracy result = ce::evaluate(model, test);
    accuracy = result.fraction();
    if (log) {
      std::printf("epoch %lld/%lld done: train loss %.4f, test accuracy %.4f (%lld/%lld), %.1f s\n",
                  static_cast<long long>(epoch + 1), static_cast<long long>(o.epochs), train_loss, accuracy,
                  static_cast<long long>(result.correct), static_cast<long long>(result.total), train_seconds);
    }
    if (!o.checkpoint.empty() && rank == 0) {
      ce::save_checkpoint(o.checkpoint, *model, *sgd, epoch + 1);
      std::printf("checkpoint written: %s (epoch %lld)\n", o.checkpoint.c_str(), static_cast<long long>(epoch + 1));
    }
    std::fflush(stdout);
  }

  if (log) print_final_line(o, first_epoch, accuracy, seconds_since(start));
  // Every rank holds the same reduced accuracy, so all exit with the same code.
  if (o.min_accuracy > 0 && accuracy < o.min_accuracy) {
    if (log) std::fprintf(stderr, "train_fashion_mnist: error: test accuracy %.4f is below --min-accuracy %.4f\n",
                          accuracy, o.min_accuracy);
    chorus::shutdown();
    return 1;
  }
  chorus::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ce::guarded_main("train_fashion_mnist", argc, argv, ce::parse_train_options, run);
}
