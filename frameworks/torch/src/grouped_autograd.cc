// Autograd through the grouped collectives (Horovod's HorovodGroupedAllreduce,
// HorovodGroupedAllgather, HorovodGroupedReducescatter): each member's
// gradient as its single collective's (autograd_ops.cc), the backward
// collectives themselves grouped as "<group name>.grad".
#include <torch/autograd.h>
#include <torch/torch.h>

#include "autograd_context.h"
#include "autograd_ops.h"

namespace chorus {
namespace torch_adapter {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The members' gradients, then nothing for the other forward arguments.
variable_list with_unused(variable_list grads, size_t others) {
  for (size_t i = 0; i < others; ++i) grads.emplace_back();
  return grads;
}

struct GroupedAllgatherFunction : torch::autograd::Function<GroupedAllgatherFunction> {
  static variable_list forward(AutogradContext* ctx, at::TensorList tensors, const std::string& name,
                               const ProcessSet& set) {
    save_common(ctx, name, set);
    std::vector<int64_t> rows;
    for (const torch::Tensor& t : tensors) rows.push_back(first_dim(t));
    ctx->saved_data["rows"] = rows;
    return grouped_allgather(tensors.vec(), name, set);
  }
  // Every member: the ranks' gradients averaged, this rank's rows.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const ProcessSet set = set_of(ctx);
    const std::vector<int64_t> rows = ctx->saved_data["rows"].toIntVector();
    const int64_t members = static_cast<int64_t>(rows.size());
    torch::Tensor all_rows = allgather(torch::tensor(rows, torch::kInt64).reshape({1, members}),
                                       grad_name(ctx) + ".rows", set);
    variable_list averaged = grouped_allreduce(grads, grad_name(ctx), gradient_average(), set);
    const torch::Tensor offsets = all_rows.narrow(0, 0, set.rank_of(rank())).sum(0);
    for (int64_t m = 0; m < members; ++m) averaged[m] = averaged[m].narrow(0, offsets[m].item<int64_t>(), rows[m]);
    return with_unused(averaged, 2);
  }
};

// Grouped allreduce (kScatter false) or reducescatter (true): the backward
// is the allreduce again, or the allgather of the gradients times the scale.
template <bool kScatter>
struct GroupedReductionFunction : torch::autograd::Function<GroupedReductionFunction<kScatter>> {
  static variable_list forward(AutogradContext* ctx, at::TensorList tensors, const std::string& name,
                               const AllreduceOptions& options, const ProcessSet& set) {
    save_reduction_call(ctx, name, set, options);
    return kScatter ? grouped_reducescatter(tensors.vec(), name, options, set)
                    : grouped_allreduce(tensors.vec(), name, options, set);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const AllreduceOptions options =
        differentiable_reduction(ctx, kScatter ? "grouped reducescatter" : "grouped allreduce");
    const ProcessSet set = set_of(ctx);
    if (!kScatter) return with_unused(grouped_allreduce(grads, grad_name(ctx), options, set), 3);
    const double scale = scatter_gradient_scale(options, set);
    variable_list gathered = grouped_allgather(grads, grad_name(ctx), set);
    if (scale != 1.0) {
      for (torch::Tensor& g : gathered) g.mul_(scale);
    }
    return with_unused(gathered, 3);
  }
};

}  // namespace

bool any_wants_grad(const std::vector<torch::Tensor>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const torch::Tensor& t) { return wants_grad(t); });
}

std::vector<torch::Tensor> grouped_allreduce_with_grad(const std::vector<torch::Tensor>& tensors,
                                                       const std::string& name, const AllreduceOptions& options,
                                                       const ProcessSet& process_set) {
  return GroupedReductionFunction<false>::apply(at::TensorList(tensors), name, options, process_set);
}

std::vector<torch::Tensor> grouped_allgather_with_grad(const std::vector<torch::Tensor>& tensors,
                                                       const std::string& name, const ProcessSet& process_set) {
  return GroupedAllgatherFunction::apply(at::TensorList(tensors), name, process_set);
}

std::vector<torch::Tensor> grouped_reducescatter_with_grad(const std::vector<torch::Tensor>& tensors,
                                                           const std::string& name, const AllreduceOptions& options,
                                                           const ProcessSet& process_set) {
  return GroupedReductionFunction<true>::apply(at::TensorList(tensors), name, options, process_set);
}

}  // namespace torch_adapter
}  // namespace chorus
