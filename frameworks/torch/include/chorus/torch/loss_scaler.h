#pragma once
/// \file loss_scaler.h
/// Dynamic loss scaling for low-precision training (LibTorch's C++ API has
/// no GradScaler). The inf/NaN check is agreed across the ranks of the
/// optimizer's process set, so each of them skips the same steps and lowers
/// its scale together.

#include <cstdint>

#include <torch/types.h>

#include "chorus/torch/distributed_optimizer.h"

namespace chorus {

struct LossScalerOptions {
  double init_scale = 65536.0;
  /// Scale multiplier after growth_interval steps in a row without inf/NaN.
  double growth_factor = 2.0;
  /// Scale multiplier after a step with inf/NaN gradients (on any rank).
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(LossScalerOptions options = {});

  /// loss x scale: call backward() on this.
  torch::Tensor scale(const torch::Tensor& loss) const;
  /// Synchronizes `optimizer`, divides the gradients by the scale, and asks
  /// every rank of its process set whether any gradient is inf or NaN. If
  /// none is, steps the wrapped optimizer; otherwise skips the step. Then
  /// updates the scale. Returns true when the optimizer stepped (the same on
  /// every rank of the set).
  bool step(DistributedOptimizer& optimizer);

  double get_scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace chorus
