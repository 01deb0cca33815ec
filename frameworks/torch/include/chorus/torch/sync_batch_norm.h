#pragma once
/// \file sync_batch_norm.h
/// SyncBatchNorm (Horovod's hvd.SyncBatchNorm, PyTorch's nn.SyncBatchNorm):
/// batch normalization whose training-mode statistics are those of the
/// union of every member's batch of a process set, as if one process had
/// normalized the global batch. Member batches may differ in size.
///
/// Forward (training): each member allgathers its row count, mean and
/// biased variance per channel; every member combines them the same way
/// (parallel-variance formula) and normalizes its rows with the global
/// mean and variance. Backward allreduces the per-channel sums of dy and
/// dy * (x - mean), so the input gradient is that of the global batch.
/// The weight and bias gradients stay local (this rank's rows), so their
/// sum over the members is the global batch's gradient; DistributedOptimizer
/// then reduces them like any other parameter's.
///
/// Eval mode normalizes with the running statistics, locally. The running
/// variance is updated with the unbiased global variance, as torch does.
/// One module serves the 1d, 2d and 3d cases (inputs of 2 to 5 dimensions,
/// channels on dimension 1). Every member must call forward (and backward)
/// the same number of times, in the same order as its other collectives.

#include <string>

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "chorus/process_set.h"

namespace chorus {

struct SyncBatchNormOptions {
  /* implicit */ SyncBatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  /// The fields of torch::nn::BatchNormOptions, with its defaults.
  SyncBatchNormOptions(const torch::nn::BatchNormOptions& batch_norm);
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  /// None: a cumulative average over the batches seen (as in torch).
  TORCH_ARG(c10::optional<double>, momentum) = 0.1;
  TORCH_ARG(bool, affine) = true;
  TORCH_ARG(bool, track_running_stats) = true;
  /// Whose batches make up the statistics (the global set by default).
  TORCH_ARG(ProcessSet, process_set);
  /// Prefix of the module's collective names (".stats" forward, ".grad"
  /// backward); empty: "sync_batch_norm[.set<id>].noname.<n>" counting the
  /// modules constructed, so build them in the same order on every member.
  TORCH_ARG(std::string, name);
};

class SyncBatchNormImpl : public torch::nn::Cloneable<SyncBatchNormImpl> {
 public:
  explicit SyncBatchNormImpl(SyncBatchNormOptions options);
  /// Parameters and buffers (and their state) copied from a torch BatchNorm
  /// module of any dimension: Horovod's convert_sync_batchnorm for one module.
  template <size_t D, typename Derived>
  SyncBatchNormImpl(const torch::nn::BatchNormImplBase<D, Derived>& batch_norm, const ProcessSet& process_set = {})
      : SyncBatchNormImpl(SyncBatchNormOptions(batch_norm.options).process_set(process_set)) {
    copy_state(batch_norm.weight, batch_norm.bias, batch_norm.running_mean, batch_norm.running_var,
               batch_norm.num_batches_tracked);
  }

  void reset() override;
  void reset_parameters();
  void reset_running_stats();
  torch::Tensor forward(const torch::Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  SyncBatchNormOptions options;
  /// Names as in torch's BatchNorm, so state dicts carry over.
  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  void check_input(const torch::Tensor& input) const;
  void update_running_stats(const torch::Tensor& mean, const torch::Tensor& unbiased_var);
  void copy_state(const torch::Tensor& weight, const torch::Tensor& bias, const torch::Tensor& running_mean,
                  const torch::Tensor& running_var, const torch::Tensor& num_batches_tracked);
};
TORCH_MODULE(SyncBatchNorm);

}  // namespace chorus
