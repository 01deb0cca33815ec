#pragma once
/// \file distributed_optimizer.h
/// DistributedOptimizer: wraps a torch::optim::Optimizer so that every
/// gradient is allreduced across ranks, overlapped with backward.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include "chorus/options.h"
#include "chorus/torch/compression.h"

namespace chorus {

struct DistributedOptimizerOptions {
  /// Average (default) or Sum; Min and Max work too.
  ReduceOp op = ReduceOp::kAverage;
  /// What goes on the wire; none by default. Compression::fp16() / bf16().
  std::shared_ptr<Compression> compression;
  /// Backward passes per step(): gradients accumulate locally and are
  /// allreduced on the last pass only.
  int backward_passes_per_step = 1;
  /// With backward_passes_per_step = k > 1, divide the accumulated gradient
  /// by k (true: k passes over batches of B equal one pass over a batch of
  /// k x B with a mean loss) or keep the sum (false: Horovod's behaviour).
  bool average_backward_passes = true;
  /// Average only: divide by this before the allreduce and by size/this after
  /// (guards low-precision sums against overflow). 1 = plain average.
  double gradient_predivide_factor = 1.0;
  /// Prefix of the collective names of the gradients ("<prefix><param name>").
  /// Two DistributedOptimizers over different parameters need different prefixes
  /// only when parameter names collide.
  std::string name_prefix = "grad.";
  /// After the first step(), keep the gradients in one flat buffer per device
  /// and dtype (on the parameters' device),
  /// laid out in the order autograd produced them (the order they are
  /// negotiated and fused in), so a fused allreduce reduces them where they
  /// are instead of copying them into and out of a fusion buffer (PyTorch
  /// DDP's gradient_as_bucket_view). Gradients are then slices of that
  /// buffer; a gradient you replace (p.mutable_grad() = ...) is still
  /// reduced correctly, through the copying path. CPU buffers come from
  /// the shared-memory arena (empty_shared_host), so with every rank on one
  /// host the fused allreduces read and write the other ranks' gradients in
  /// place (zero-copy). Saves nothing with compression (what is sent is a
  /// compressed copy).
  bool flat_gradients = true;
  /// The ranks whose gradients are averaged (Horovod's process_set argument):
  /// the global set by default. Only members construct the optimizer; two
  /// sets can train different models side by side.
  ProcessSet process_set;
  /// Sparse gradients (torch::nn::Embedding with sparse(true)): false (the
  /// default, as Horovod) allgathers every rank's indices and values and
  /// leaves a sparse gradient holding all of them, scaled as op and the
  /// factors above say; true turns them dense first and allreduces them like
  /// the rest (Horovod's sparse_as_dense: better when most rows are touched).
  /// With op Min or Max sparse gradients are always reduced densely.
  /// A parameter whose gradient came sparse once stays sparse: a step in
  /// which it got no gradient sends an empty sparse one.
  bool sparse_as_dense = false;
};

/// Every rank constructs it (the parameter lists are compared across ranks
/// there, and a mismatch throws on every rank; not in an elastic job, where
/// a rank that joins builds its optimizer while the others train). The gradient of each
/// parameter is allreduced as soon as autograd has accumulated it, so the
/// communication overlaps the rest of backward; step() waits for all of
/// them, then runs the wrapped optimizer.
///
/// Parameters that got no gradient in a step are allreduced as zeros in
/// synchronize(), so no rank ever waits on another. Not thread-safe: one
/// training loop drives it.
class DistributedOptimizer {
 public:
  /// `named_parameters` must cover every parameter of `optimizer` (names
  /// unique, the same on every rank); usually module->named_parameters().
  /// Host and CUDA parameters; a rank's CUDA parameters on one GPU (else
  /// InvalidArgumentError naming two of them).
  DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                       const torch::OrderedDict<std::string, torch::Tensor>& named_parameters,
                       DistributedOptimizerOptions options = {});
  DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                       const std::vector<std::pair<std::string, torch::Tensor>>& named_parameters,
                       DistributedOptimizerOptions options = {});
  /// Without names (Horovod's DistributedOptimizer without
  /// named_parameters): parameter j of param group i is named
  /// "allreduce.noname.<i>.<j>" (after options.name_prefix), so every rank
  /// must build its optimizer with the same groups in the same order.
  explicit DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                DistributedOptimizerOptions options = {});
  /// Removes the gradient hooks. Pending allreduces are waited for.
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  /// Waits for (and starts, for parameters whose gradient never came) every
  /// gradient allreduce and writes the results into the gradients. Call it
  /// before clipping or inspecting gradients, then call skip_synchronize()
  /// so the next step() does not wait again. Until the next step(), calling
  /// it again does nothing (reduced gradients are never reduced twice).
  /// Collective: every rank calls it as often.
  void synchronize();
  /// The next step() skips its synchronize() (you called it yourself).
  void skip_synchronize();
  /// synchronize() (unless skipped), then the wrapped optimizer's step().
  /// With a timeline running (chorus::start_timeline), each step is a span
  /// "step N" (N = 1, 2, ... counting this optimizer's steps) on the row
  /// "steps <name_prefix>", from the end of the previous step() (or the
  /// construction) to the end of this one, so the collectives of step N lie
  /// inside it.
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr);
  /// Steps taken so far.
  int64_t steps() const { return steps_; }
  /// The wrapped optimizer's zero_grad(), except that flat gradients are
  /// zeroed in their buffers (one fill each), never set to none; throws
  /// chorus::PreconditionError while allreduces of this step are still
  /// pending (call step() or synchronize() first).
  void zero_grad();
  /// Forgets what it agreed with the current world's ranks: the allreduces
  /// of this step (done or failed) and the gradients' layout, agreed again
  /// at the next step with the ranks of the next world (a new optimizer, on
  /// a rank that joined, has agreed nothing yet either). Every survivor of an
  /// elastic reset calls it: TorchState does (chorus/torch/elastic.h).
  void reset();

  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  const DistributedOptimizerOptions& options() const { return options_; }
  /// Names of the parameters, in the order allreduces are named.
  std::vector<std::string> parameter_names() const;

  class State;  // gradient hooks and in-flight allreduces (distributed_optimizer.cc)

 private:
  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  DistributedOptimizerOptions options_;
  std::shared_ptr<State> state_;
  bool skip_next_synchronize_ = false;
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point step_began_ = std::chrono::steady_clock::now();
};

}  // namespace chorus
