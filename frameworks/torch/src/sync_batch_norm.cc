// SyncBatchNorm: global statistics through one allgather per forward, the
// global input gradient through one allreduce per backward (Horovod's
// sync_batch_norm.py, in plain ATen ops).
#include "chorus/torch/sync_batch_norm.h"

#include <torch/autograd.h>
#include <torch/torch.h>

#include "auto_name.h"
#include "chorus/error.h"
#include "chorus/torch/ops.h"

namespace chorus {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

// Every dimension but the channels (1).
std::vector<int64_t> reduced_dims(const torch::Tensor& x) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel vector shaped to broadcast against x.
torch::Tensor per_channel(const torch::Tensor& v, const torch::Tensor& x) {
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = -1;
  return v.view(shape);
}

struct GlobalStats {
  torch::Tensor mean, var;  // per channel, biased variance, stats_dtype(x)
  double count = 0;         // rows x spatial positions over every member
};

// As PyTorch: half inputs (fp16, bf16) keep their statistics in float32.
torch::ScalarType stats_dtype(const torch::Tensor& x) {
  const torch::ScalarType t = x.scalar_type();
  return t == torch::kHalf || t == torch::kBFloat16 ? torch::kFloat32 : t;
}

// What is wrong with `input` for a module with `options`; empty when nothing is.
std::string input_problem(const torch::Tensor& input, const SyncBatchNormOptions& options) {
  if (input.dim() < 2 || input.dim() > 5) {
    return "SyncBatchNorm '" + options.name() + "': expected an input of 2 to 5 dimensions (N, C, ...), got shape " +
           c10::str(input.sizes());
  }
  if (input.size(1) != options.num_features()) {
    return "SyncBatchNorm '" + options.name() + "': input of shape " + c10::str(input.sizes()) + " has " +
           std::to_string(input.size(1)) + " channels, the module " + std::to_string(options.num_features());
  }
  return "";
}

// A member that refused its input sent count -1: it throws its own
// `problem`, the others an error naming it (no member waits for another).
void throw_if_refused(const torch::Tensor& counts, const std::string& problem, const std::string& name,
                      const ProcessSet& set) {
  std::string refused;
  const torch::Tensor host = counts.to(torch::kCPU);
  for (int64_t r = 0; r < host.size(0); ++r) {
    if (host[r].item<double>() >= 0) continue;
    const int global = set.is_global() ? static_cast<int>(r) : set.ranks()[static_cast<size_t>(r)];
    refused += (refused.empty() ? "" : ", ") + std::to_string(global);
  }
  if (refused.empty()) return;
  if (!problem.empty()) invalid(problem);
  invalid("SyncBatchNorm '" + name + "': rank(s) " + refused +
          " refused their input (see the error there); every member of the process set fails this forward");
}

// Each member's count, mean and biased variance, allgathered in float64 and
// combined by the parallel-variance formula: every member computes the
// same result from the same gathered rows. A member whose input has a
// `problem` still sends a row (count -1), so that all of them fail together.
GlobalStats gather_stats(const torch::Tensor& x, const std::string& problem, int64_t channels, const std::string& name,
                         const ProcessSet& set) {
  const int64_t count = !problem.empty() ? -1 : x.numel() / channels;
  torch::Tensor mean = torch::zeros({channels}, x.options().dtype(torch::kFloat64));
  torch::Tensor var = torch::zeros_like(mean);
  if (count > 0) {
    auto [v, m] = torch::var_mean(x.to(stats_dtype(x)), reduced_dims(x), /*unbiased=*/false);
    mean = m.to(torch::kFloat64);
    var = v.to(torch::kFloat64);
  }
  torch::Tensor row = torch::cat({torch::full({1}, static_cast<double>(count), mean.options()), mean, var});
  torch::Tensor rows = allgather(row.unsqueeze(0), name + ".stats", set);
  torch::Tensor counts = rows.select(1, 0).unsqueeze(1);
  throw_if_refused(counts.squeeze(1), problem, name, set);
  torch::Tensor means = rows.slice(1, 1, 1 + channels), vars = rows.slice(1, 1 + channels);
  GlobalStats out;
  out.count = counts.sum().item<double>();
  if (out.count < 2) {
    invalid("SyncBatchNorm '" + name + "': expected more than 1 value per channel over the process set in training, got " +
            std::to_string(static_cast<int64_t>(out.count)) + " (input of shape " + c10::str(x.sizes()) + " here)");
  }
  torch::Tensor global_mean = (counts * means).sum(0) / out.count;
  torch::Tensor global_var = (counts * (vars + (means - global_mean).pow(2))).sum(0) / out.count;
  out.mean = global_mean.to(stats_dtype(x));
  out.var = global_var.to(stats_dtype(x));
  return out;
}

// y = (x - mean) * invstd * weight + bias with the given (global, constant)
// statistics; the backward reduces sum(dy) and sum(dy * (x - mean)) over the
// process set, which is where the statistics' dependence on x comes in.
struct SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& mean, const torch::Tensor& invstd,
                               double count, const std::string& name, const ProcessSet& set) {
    ctx->save_for_backward({x, weight, mean, invstd});
    ctx->saved_data["count"] = count;
    ctx->saved_data["name"] = name;
    ctx->saved_data["set_id"] = static_cast<int64_t>(set.id());
    ctx->saved_data["set_ranks"] = std::vector<int64_t>(set.ranks().begin(), set.ranks().end());
    ctx->saved_data["bias_dtype"] = static_cast<int64_t>(bias.scalar_type());
    // Computed in the statistics' precision, returned in the input's dtype.
    const torch::Tensor xs = x.to(mean.scalar_type());
    return ((xs - per_channel(mean, x)) * per_channel(invstd * weight, x) + per_channel(bias, x)).to(x.scalar_type());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &weight = saved[1], &mean = saved[2], &invstd = saved[3];
    const torch::Tensor x = saved[0].to(mean.scalar_type()), dy = grad_outputs[0].to(mean.scalar_type());
    const torch::Tensor xmu = x - per_channel(mean, x);
    const std::vector<int64_t> dims = reduced_dims(x);
    const torch::Tensor sum_dy = dy.sum(dims), sum_dy_xmu = (dy * xmu).sum(dims);
    torch::Tensor grad_x;
    if (ctx->needs_input_grad(0)) {
      std::vector<int> ranks;
      for (int64_t r : ctx->saved_data["set_ranks"].toIntVector()) ranks.push_back(static_cast<int>(r));
      const ProcessSet set = ctx->saved_data["set_id"].toInt() == 0
                                 ? ProcessSet()
                                 : ProcessSet(static_cast<int32_t>(ctx->saved_data["set_id"].toInt()), ranks);
      AllreduceOptions sum;
      sum.op = ReduceOp::kSum;
      const torch::Tensor both =
          allreduce(torch::cat({sum_dy, sum_dy_xmu}), ctx->saved_data["name"].toStringRef() + ".grad", sum, nullptr, set);
      const double count = ctx->saved_data["count"].toDouble();
      const int64_t channels = x.size(1);
      const torch::Tensor mean_dy = both.slice(0, 0, channels) / count;
      const torch::Tensor mean_dy_xmu = both.slice(0, channels) / count;
      grad_x = ((dy - per_channel(mean_dy, x) - xmu * per_channel(invstd * invstd * mean_dy_xmu, x)) *
                per_channel(invstd * weight, x))
                   .to(saved[0].scalar_type());
    }
    const auto bias_dtype = static_cast<torch::ScalarType>(ctx->saved_data["bias_dtype"].toInt());
    torch::Tensor grad_weight =
        ctx->needs_input_grad(1) ? (sum_dy_xmu * invstd).to(weight.scalar_type()) : torch::Tensor();
    torch::Tensor grad_bias = ctx->needs_input_grad(2) ? sum_dy.to(bias_dtype) : torch::Tensor();
    return {grad_x, grad_weight, grad_bias, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

SyncBatchNormOptions::SyncBatchNormOptions(const torch::nn::BatchNormOptions& batch_norm)
    : num_features_(batch_norm.num_features()),
      eps_(batch_norm.eps()),
      momentum_(batch_norm.momentum()),
      affine_(batch_norm.affine()),
      track_running_stats_(batch_norm.track_running_stats()) {}

SyncBatchNormImpl::SyncBatchNormImpl(SyncBatchNormOptions options_) : options(std::move(options_)) {
  // Named once, here: clones and reset() keep the name, so they match up.
  options.name(torch_adapter::name_or_auto(options.name(), "sync_batch_norm", options.process_set()));
  reset();
}

void SyncBatchNormImpl::reset() {
  const int64_t c = options.num_features();
  if (c <= 0) invalid("SyncBatchNorm '" + options.name() + "': num_features must be positive, got " + std::to_string(c));
  if (options.affine()) {
    weight = register_parameter("weight", torch::empty({c}));
    bias = register_parameter("bias", torch::empty({c}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", torch::zeros({c}));
    running_var = register_buffer("running_var", torch::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::kLong));
  }
  reset_parameters();
}

void SyncBatchNormImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  torch::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void SyncBatchNormImpl::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  torch::NoGradGuard no_grad;
  weight.fill_(1);
  bias.zero_();
}

void SyncBatchNormImpl::copy_state(const torch::Tensor& w, const torch::Tensor& b, const torch::Tensor& rm,
                                   const torch::Tensor& rv, const torch::Tensor& tracked) {
  torch::NoGradGuard no_grad;
  if (options.affine()) {
    weight.copy_(w);
    bias.copy_(b);
  }
  if (options.track_running_stats()) {
    running_mean.copy_(rm);
    running_var.copy_(rv);
    num_batches_tracked.copy_(tracked);
  }
}

void SyncBatchNormImpl::check_input(const torch::Tensor& input) const {
  const std::string problem = input_problem(input, options);
  if (!problem.empty()) invalid(problem);
}

void SyncBatchNormImpl::update_running_stats(const torch::Tensor& mean, const torch::Tensor& unbiased_var) {
  torch::NoGradGuard no_grad;
  num_batches_tracked.add_(1);
  const double factor = options.momentum() ? *options.momentum() : 1.0 / num_batches_tracked.item<double>();
  running_mean.mul_(1 - factor).add_(mean, factor);
  running_var.mul_(1 - factor).add_(unbiased_var, factor);
}

torch::Tensor SyncBatchNormImpl::forward(const torch::Tensor& input) {
  const int64_t c = options.num_features();
  const torch::Tensor w = options.affine() ? weight : torch::ones({c}, input.options());
  const torch::Tensor b = options.affine() ? bias : torch::zeros({c}, input.options());
  if (!is_training() && options.track_running_stats()) {  // local: no collective to fail together in
    check_input(input);
    return torch::batch_norm(input, w, b, running_mean, running_var, /*training=*/false, 0.0, options.eps(),
                             /*cudnn_enabled=*/false);
  }
  GlobalStats stats;
  {
    torch::NoGradGuard no_grad;
    stats = gather_stats(input.detach(), input_problem(input, options), c, options.name(), options.process_set());
  }
  if (is_training() && options.track_running_stats()) {
    update_running_stats(stats.mean, stats.var * (stats.count / (stats.count - 1)));
  }
  const torch::Tensor invstd = (stats.var + options.eps()).rsqrt();
  return SyncBatchNormFunction::apply(input, w, b, stats.mean, invstd, stats.count, options.name(),
                                      options.process_set());
}

void SyncBatchNormImpl::pretty_print(std::ostream& stream) const {
  stream << "chorus::SyncBatchNorm(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats()
         << ", name=" << options.name() << ")";
}

}  // namespace chorus
