// synthetic_benchmark: training throughput of ResNet-18 with Chorus, the
// workload of Horovod's pytorch_synthetic_benchmark (and of
// ddp_benchmark.py next to this file, for PyTorch DDP): batch 32 of 3x32x32
// images per rank, SGD with lr 0.01 x size, warm-up, then timed iterations.
//
//   chorusrun -np 2 ./synthetic_benchmark --num-iters 10
//
// The last line is machine-readable (scripts/compare_ddp.sh parses it):
//   RESULT np=2 imgs_per_sec_total=... per_rank=... std=...

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <chorus/torch.h>

#include "batches.h"
#include "benchmark_options.h"
#include "guarded_main.h"
#include "resnet.h"
#include "stats.h"

namespace ce = chorus_examples;

namespace {

using Clock = std::chrono::steady_clock;

// Where a rank's step time goes, summed over the timed steps.
struct StepTimes {
  double compute = 0;  // zero_grad, forward, backward (allreduces start during it)
  double waiting = 0;  // synchronize(): the allreduces still in flight after backward
  double update = 0;   // the wrapped optimizer's step()
  int64_t steps = 0;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One optimizer step: batches_per_allreduce backward passes, then the wait
// for the gradient allreduces started during backward, then the update
// (what DistributedOptimizer::step() does, split to time each part).
void train_step(ce::ResNet18& model, chorus::DistributedOptimizer& optimizer, ce::BatchSource& batches,
                int64_t batches_per_allreduce, StepTimes* times = nullptr) {
  const auto start = Clock::now();
  optimizer.zero_grad();
  for (int64_t i = 0; i < batches_per_allreduce; ++i) {
    ce::Batch b = batches.next();
    torch::nn::functional::cross_entropy(model->forward(b.images), b.labels).backward();
  }
  const auto computed = Clock::now();
  optimizer.synchronize();
  const auto synchronized = Clock::now();
  optimizer.skip_synchronize();
  optimizer.step();
  if (times) {
    times->compute += std::chrono::duration<double>(computed - start).count();
    times->waiting += std::chrono::duration<double>(synchronized - computed).count();
    times->update += seconds_since(synchronized);
    ++times->steps;
  }
}

// Every rank's images/s in every iteration summed over ranks: the job's
// total per iteration. One collective after the timing, so none inside it.
std::vector<double> total_rates(const std::vector<double>& rates) {
  chorus::AllreduceOptions sum;
  sum.op = chorus::Sum;
  auto t = chorus::allreduce(torch::tensor(rates, torch::kFloat64), "benchmark.rates", sum);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

// `rank` is set once known, for error messages after a shutdown.
int run(const ce::BenchmarkOptions& o, int* rank_out) {
  torch::set_num_threads(static_cast<int>(o.threads));
  chorus::init();
  *rank_out = chorus::rank();
  const int size = chorus::size();
  const bool log = chorus::rank() == 0;
  torch::manual_seed(o.seed);

  ce::ResNet18 model(10);
  auto sgd = std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(o.lr * size));
  chorus::DistributedOptimizerOptions dist_options;
  if (o.fp16_allreduce) dist_options.compression = chorus::Compression::fp16();
  dist_options.backward_passes_per_step = static_cast<int>(o.batches_per_allreduce);
  dist_options.flat_gradients = !o.no_flat_gradients;
  chorus::DistributedOptimizer optimizer(sgd, model->named_parameters(), dist_options);
  chorus::broadcast_parameters(*model, 0);
  chorus::broadcast_optimizer_state(optimizer, 0);

  std::unique_ptr<ce::BatchSource> batches =
      o.data_dir.empty() ? ce::random_batches(o.batch_size) : ce::cifar10_batches(o.data_dir, o.batch_size);

  int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  if (log) {
    std::printf("Model: resnet18 (%lld parameters), input 3x32x32, %s\n", static_cast<long long>(parameters),
                o.data_dir.empty() ? "random data" : ("CIFAR-10 from " + o.data_dir).c_str());
    std::printf("Batch size: %lld per rank, %lld batches per allreduce, fp16 allreduce %s, %lld threads per rank\n",
                static_cast<long long>(o.batch_size), static_cast<long long>(o.batches_per_allreduce),
                o.fp16_allreduce ? "on" : "off", static_cast<long long>(o.threads));
    std::printf("Number of ranks: %d\nRunning warmup...\n", size);
    std::fflush(stdout);
  }
  model->train();
  for (int64_t i = 0; i < o.num_warmup_batches; ++i) train_step(model, optimizer, *batches, o.batches_per_allreduce);

  if (log) std::printf("Running benchmark...\n");
  const double images_per_iter =
      static_cast<double>(o.batch_size * o.batches_per_allreduce * o.num_batches_per_iter);
  std::vector<double> rates;
  StepTimes times;
  for (int64_t iter = 0; iter < o.num_iters; ++iter) {
    const auto start = Clock::now();
    for (int64_t i = 0; i < o.num_batches_per_iter; ++i)
      train_step(model, optimizer, *batches, o.batches_per_allreduce, &times);
    rates.push_back(images_per_iter / seconds_since(start));
    if (log) {
      std::printf("Iter #%lld: %.1f img/sec on rank 0\n", static_cast<long long>(iter), rates.back());
      std::fflush(stdout);
    }
  }

  const std::vector<double> totals = total_rates(rates);
  std::vector<double> per_rank;
  for (double t : totals) per_rank.push_back(t / size);
  const ce::MeanStd rank_stats = ce::mean_std(per_rank), total_stats = ce::mean_std(totals);
  if (log) {
    std::printf("Img/sec per rank: %.1f +-%.1f\n", rank_stats.mean, 1.96 * rank_stats.std);
    std::printf("Total img/sec on %d rank(s): %.1f +-%.1f\n", size, total_stats.mean, 1.96 * total_stats.std);
    const double ms = 1000.0 / static_cast<double>(std::max<int64_t>(1, times.steps));
    std::printf("Step time on rank 0: forward+backward %.1f ms, waiting for allreduces %.1f ms, update %.1f ms\n",
                times.compute * ms, times.waiting * ms, times.update * ms);
    const chorus::RuntimeStats st = chorus::runtime().stats();
    std::printf("Allreduces on rank 0: %lld data-plane calls, %lld fused, %lld of those in place (flat gradients %s), "
                "%lld zero-copy in shared memory\n",
                static_cast<long long>(st.allreduce_ops), static_cast<long long>(st.fused_allreduce_ops),
                static_cast<long long>(st.in_place_fused_allreduce_ops), o.no_flat_gradients ? "off" : "on",
                static_cast<long long>(st.shm_zero_copy_ops));
    std::printf("RESULT np=%d imgs_per_sec_total=%.1f per_rank=%.1f std=%.1f\n", size, total_stats.mean,
                rank_stats.mean, rank_stats.std);
    std::fflush(stdout);
  }
  chorus::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ce::guarded_main("synthetic_benchmark", argc, argv, ce::parse_benchmark_options, run);
}
