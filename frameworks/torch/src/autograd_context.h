#pragma once
// What the collectives' autograd functions keep between forward and backward
// (autograd keeps IValues only): the name, the process set's id and the
// reduction. Private to autograd_ops.cc and grouped_autograd.cc.

#include <string>

#include <torch/autograd.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch_adapter {

inline void save_common(torch::autograd::AutogradContext* ctx, const std::string& name, const ProcessSet& set) {
  ctx->saved_data["name"] = name;
  ctx->saved_data["set"] = static_cast<int64_t>(set.id());
}

inline void save_reduction(torch::autograd::AutogradContext* ctx, const AllreduceOptions& options) {
  ctx->saved_data["op"] = static_cast<int64_t>(options.op);
  ctx->saved_data["prescale"] = options.prescale_factor;
  ctx->saved_data["postscale"] = options.postscale_factor;
}

/// Both of the above: a reduction's forward.
inline void save_reduction_call(torch::autograd::AutogradContext* ctx, const std::string& name, const ProcessSet& set,
                                const AllreduceOptions& options) {
  save_common(ctx, name, set);
  save_reduction(ctx, options);
}

/// The set the forward ran in, rebuilt from its id.
inline ProcessSet set_of(torch::autograd::AutogradContext* ctx) {
  const int32_t id = static_cast<int32_t>(ctx->saved_data["set"].toInt());
  return id == 0 ? ProcessSet() : current_runtime()->process_set(id);
}

/// Rows of a tensor to be gathered or split; 0 for a scalar, which the
/// collective itself refuses on every rank (a local throw here would leave
/// the other ranks waiting).
inline int64_t first_dim(const torch::Tensor& tensor) { return tensor.dim() > 0 ? tensor.size(0) : 0; }

/// The backward collective's name: every rank derives it from the forward's.
inline std::string grad_name(torch::autograd::AutogradContext* ctx) {
  return ctx->saved_data["name"].toStringRef() + ".grad";
}

/// The forward's reduction. Only Sum and Average (linear in every input)
/// have a gradient that is a collective; Min, Max and Product would need to
/// know which rank won: InvalidArgumentError "<what> '<name>' with max has
/// no gradient", on every rank alike.
inline AllreduceOptions differentiable_reduction(torch::autograd::AutogradContext* ctx, const std::string& what) {
  AllreduceOptions options;
  options.op = static_cast<ReduceOp>(ctx->saved_data["op"].toInt());
  options.prescale_factor = ctx->saved_data["prescale"].toDouble();
  options.postscale_factor = ctx->saved_data["postscale"].toDouble();
  if (options.op != ReduceOp::kSum && options.op != ReduceOp::kAverage) {
    throw InvalidArgumentError(Status::invalid_argument(what + " '" + ctx->saved_data["name"].toStringRef() +
                                                        "' with " + reduce_op_name(options.op) +
                                                        " has no gradient; only Sum and Average are differentiable"));
  }
  return options;
}

/// Allgather's and broadcast's backward reduction: Horovod averages the
/// gradients there (allreduce(average=True)), not sums them.
inline AllreduceOptions gradient_average() {
  AllreduceOptions average;
  average.op = ReduceOp::kAverage;
  return average;
}

/// Reducescatter's gradient scale, Horovod's: the set size for Sum, 1 for
/// Average, times prescale x postscale. That is the set size times the
/// gradient of the sum of the ranks' losses.
inline double scatter_gradient_scale(const AllreduceOptions& options, const ProcessSet& set) {
  const double scale = options.prescale_factor * options.postscale_factor;
  return options.op == ReduceOp::kSum ? scale * set.size() : scale;
}

}  // namespace torch_adapter
}  // namespace chorus
