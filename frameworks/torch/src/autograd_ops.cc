// Autograd through the collectives, with Horovod's backward formulas and
// factors exactly (horovod/torch/mpi_ops.py). Allreduce and alltoall give the
// gradient of the sum of every rank's loss; allgather and broadcast give it
// divided by the set size (Horovod averages), reducescatter times the set size
// (docs/torch.md, "Autograd").
#include "autograd_ops.h"

#include <torch/autograd.h>
#include <torch/torch.h>

#include "autograd_context.h"

namespace chorus {
namespace torch_adapter {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct AllreduceFunction : torch::autograd::Function<AllreduceFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tensor, const std::string& name,
                               const AllreduceOptions& options, const std::shared_ptr<Compression>& compression,
                               const ProcessSet& set) {
    save_reduction_call(ctx, name, set, options);
    return allreduce_async(tensor, name, options, compression, set).wait();
  }
  // d(sum_s L_s)/dx_r = scale * (sum_s g_s or its average): the same allreduce of the gradients.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const AllreduceOptions options = differentiable_reduction(ctx, "allreduce of tensor");
    return {allreduce(grads[0], grad_name(ctx), options, nullptr, set_of(ctx)), {}, {}, {}, {}};
  }
};

struct AllgatherFunction : torch::autograd::Function<AllgatherFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tensor, const std::string& name,
                               const ProcessSet& set) {
    save_common(ctx, name, set);
    ctx->saved_data["rows"] = first_dim(tensor);
    return allgather_async(tensor, name, set).wait();
  }
  // Horovod's HorovodAllgather.backward: every rank's gradient of the whole
  // output, averaged; this rank keeps its rows (ranks' row counts may differ,
  // so they are gathered first).
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const ProcessSet set = set_of(ctx);
    const int64_t rows = ctx->saved_data["rows"].toInt();
    torch::Tensor all_rows = allgather(torch::tensor({rows}, torch::kInt64), grad_name(ctx) + ".rows", set);
    torch::Tensor averaged = allreduce(grads[0], grad_name(ctx), gradient_average(), nullptr, set);
    const int64_t offset = all_rows.narrow(0, 0, set.rank_of(rank())).sum().item<int64_t>();
    return {averaged.narrow(0, offset, rows), {}, {}};
  }
};

struct BroadcastFunction : torch::autograd::Function<BroadcastFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tensor, int root_rank,
                               const std::string& name, const ProcessSet& set) {
    save_common(ctx, name, set);
    ctx->saved_data["root"] = static_cast<int64_t>(root_rank);
    return broadcast_async(tensor, root_rank, name, set).wait();
  }
  // Horovod's HorovodBroadcast.backward: only the root's input reaches any
  // output; it gets every rank's gradient averaged, the others zeros.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    torch::Tensor averaged = allreduce(grads[0], grad_name(ctx), gradient_average(), nullptr, set_of(ctx));
    if (rank() != ctx->saved_data["root"].toInt()) averaged.zero_();
    return {averaged, {}, {}, {}};
  }
};

struct AlltoallFunction : torch::autograd::Function<AlltoallFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tensor, const std::vector<int64_t>& splits,
                               const std::string& name, const ProcessSet& set, std::vector<int64_t>* received) {
    save_common(ctx, name, set);
    ctx->saved_data["rows"] = first_dim(tensor);
    TensorHandle h = alltoall_async(tensor, splits, name, set);
    torch::Tensor output = h.wait();
    *received = h.received_splits();
    ctx->saved_data["received"] = *received;
    return output;
  }
  // The rows go back where they came from; rows past the splits were not sent
  // and get zeros.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> received = ctx->saved_data["received"].toIntVector();
    torch::Tensor back = alltoall(grads[0], received, grad_name(ctx), set_of(ctx)).output;
    const int64_t missing = ctx->saved_data["rows"].toInt() - back.size(0);
    if (missing > 0) {
      std::vector<int64_t> shape = back.sizes().vec();
      shape[0] = missing;
      back = torch::cat({back, torch::zeros(shape, back.options())});
    }
    return {back, {}, {}, {}, {}};
  }
};

struct ReducescatterFunction : torch::autograd::Function<ReducescatterFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tensor, const std::string& name,
                               const AllreduceOptions& options, const ProcessSet& set) {
    save_reduction_call(ctx, name, set, options);
    return reducescatter_async(tensor, name, options, set).wait();
  }
  // Horovod's HorovodReducescatter.backward: every rank's output gradient,
  // gathered, times the scale (set size for Sum, 1 for Average, x prescale x
  // postscale).
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const AllreduceOptions options = differentiable_reduction(ctx, "reducescatter of tensor");
    const ProcessSet set = set_of(ctx);
    const double scale = scatter_gradient_scale(options, set);
    torch::Tensor gathered = allgather(grads[0], grad_name(ctx), set);
    return {scale == 1.0 ? gathered : gathered.mul_(scale), {}, {}, {}};
  }
};

}  // namespace

bool wants_grad(const torch::Tensor& tensor) {
  return tensor.defined() && tensor.requires_grad() && torch::GradMode::is_enabled();
}

torch::Tensor allreduce_with_grad(const torch::Tensor& tensor, const std::string& name,
                                  const AllreduceOptions& options, const std::shared_ptr<Compression>& compression,
                                  const ProcessSet& process_set) {
  return AllreduceFunction::apply(tensor, name, options, compression, process_set);
}

torch::Tensor allgather_with_grad(const torch::Tensor& tensor, const std::string& name, const ProcessSet& process_set) {
  return AllgatherFunction::apply(tensor, name, process_set);
}

torch::Tensor broadcast_with_grad(const torch::Tensor& tensor, int root_rank, const std::string& name,
                                  const ProcessSet& process_set) {
  return BroadcastFunction::apply(tensor, root_rank, name, process_set);
}

AlltoallResult alltoall_with_grad(const torch::Tensor& tensor, const std::vector<int64_t>& splits,
                                  const std::string& name, const ProcessSet& process_set) {
  AlltoallResult result;
  result.output = AlltoallFunction::apply(tensor, splits, name, process_set, &result.received_splits);
  return result;
}

torch::Tensor reducescatter_with_grad(const torch::Tensor& tensor, const std::string& name,
                                      const AllreduceOptions& options, const ProcessSet& process_set) {
  return ReducescatterFunction::apply(tensor, name, options, process_set);
}

}  // namespace torch_adapter
}  // namespace chorus
