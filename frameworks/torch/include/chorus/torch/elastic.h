#pragma once
/// \file elastic.h
/// Horovod's hvd.elastic.TorchState for LibTorch: the state an elastic job
/// keeps across changes of its world (chorus/elastic.h): a model, its
/// optimizer (a DistributedOptimizer's too) and named whole numbers such as
/// the epoch and the batch.
///
///     chorus::TorchState state(*model, optimizer);
///     state.value("epoch") = 0;
///     chorus::elastic::run(state, [&] {
///       for (; state.value("epoch") < epochs; ++state.value("epoch")) {
///         ... optimizer.step(); state.commit(); ...
///       }
///     });
///
/// Guide: docs/elastic.md.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chorus/elastic.h"
#include "chorus/torch/distributed_optimizer.h"

namespace chorus {

class TorchState : public elastic::State {
 public:
  TorchState(torch::nn::Module& model, torch::optim::Optimizer& optimizer);
  /// A DistributedOptimizer's state is its wrapped optimizer's; after every
  /// reset it forgets what it agreed with the old world (reset()).
  TorchState(torch::nn::Module& model, DistributedOptimizer& optimizer);

  /// A named value saved, restored and synced with the model (0 until set).
  /// Every rank must use the same names.
  int64_t& value(const std::string& name) { return values_[name]; }

  /// Copies of the parameters, buffers, the optimizer's state and the values.
  void save() override;
  /// Puts the copies back.
  void restore() override;
  /// Rank 0's model, optimizer state and values on every rank (then saved).
  void sync() override;

 private:
  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
  DistributedOptimizer* distributed_ = nullptr;
  std::map<std::string, int64_t> values_, saved_values_;
  std::vector<torch::Tensor> saved_tensors_;  // parameters, then buffers
  std::string saved_optimizer_;               // the optimizer's own archive
};

}  // namespace chorus
