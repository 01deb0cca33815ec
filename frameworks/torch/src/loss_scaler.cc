#include "chorus/torch/loss_scaler.h"

#include <torch/torch.h>

#include "chorus/error.h"
#include "chorus/torch/ops.h"

namespace chorus {

namespace {

void check_options(const LossScalerOptions& o) {
  auto bad = [](const std::string& what) { throw InvalidArgumentError(Status::invalid_argument("DynamicLossScaler: " + what)); };
  if (!(o.init_scale > 0)) bad("init_scale must be positive");
  if (!(o.growth_factor >= 1)) bad("growth_factor must be at least 1");
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) bad("backoff_factor must be in (0, 1)");
  if (o.growth_interval < 1) bad("growth_interval must be at least 1");
}

}  // namespace

DynamicLossScaler::DynamicLossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  check_options(options_);
}

torch::Tensor DynamicLossScaler::scale(const torch::Tensor& loss) const { return loss * scale_; }

bool DynamicLossScaler::step(DistributedOptimizer& optimizer) {
  optimizer.synchronize();
  const double inverse = 1.0 / scale_;
  bool found_inf = false;
  {
    torch::NoGradGuard no_grad;
    for (auto& group : optimizer.optimizer().param_groups()) {
      for (auto& p : group.params()) {
        torch::Tensor& grad = p.mutable_grad();
        if (!grad.defined()) continue;
        grad.mul_(inverse);
        if (!found_inf && !torch::isfinite(grad).all().item<bool>()) found_inf = true;
      }
    }
  }
  // Every rank of the optimizer's process set takes the same decision: skip
  // if any of them saw inf or NaN (another set's overflow is not theirs).
  torch::Tensor flag = torch::tensor({found_inf ? 1 : 0}, torch::kInt32);
  AllreduceOptions any;
  any.op = ReduceOp::kMax;
  const DistributedOptimizerOptions& o = optimizer.options();
  found_inf = allreduce(flag, o.name_prefix + "loss_scaler.found_inf", any, nullptr, o.process_set).item<int>() != 0;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  optimizer.skip_synchronize();
  optimizer.step();
  if (++good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace chorus
