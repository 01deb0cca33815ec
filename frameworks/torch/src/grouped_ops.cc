// Grouped allgather and reducescatter on torch::Tensor: the members are
// negotiated and complete as one, and LibTorch allocates their outputs.
#include <torch/torch.h>

#include "auto_name.h"
#include "autograd_ops.h"
#include "chorus/torch/ops.h"
#include "torch_tensor.h"

namespace chorus {

namespace {

// Names "<group>.<i>" and checked, contiguous inputs for the core.
struct GroupInputs {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Tensor>> tensors;
  torch::Device device = torch::kCPU;  // where LibTorch allocates the outputs
};

GroupInputs group_inputs(const std::vector<torch::Tensor>& tensors, const std::string& group, const char* what) {
  GroupInputs in;
  for (size_t i = 0; i < tensors.size(); ++i) {
    in.names.push_back(group + "." + std::to_string(i));
    torch_adapter::check_tensor(tensors[i], std::string(what) + " of tensor '" + in.names.back() + "'");
    in.tensors.push_back(torch_adapter::wrap(tensors[i]));
    // One OpContext allocates every member's output, on one device.
    if (i > 0 && tensors[i].device() != tensors[0].device()) {
      throw InvalidArgumentError(Status::invalid_argument(
          std::string(what) + " of tensor '" + in.names.back() + "': it is on " + tensors[i].device().str() + " but '" +
          in.names.front() + "' on " + tensors[0].device().str() + "; a group is on one device"));
    }
  }
  if (!tensors.empty()) in.device = tensors[0].device();
  return in;
}

std::vector<TensorHandle> allocated_outputs(const std::vector<Handle>& handles) {
  std::vector<TensorHandle> out;
  for (const Handle& h : handles) out.emplace_back(h, [](const Handle& done) { return torch_adapter::unwrap(done.output()); });
  return out;
}

std::vector<torch::Tensor> wait_all(const std::vector<TensorHandle>& handles) {
  std::vector<torch::Tensor> results;
  for (const TensorHandle& h : handles) results.push_back(h.wait());
  return results;
}

}  // namespace

std::vector<TensorHandle> grouped_allgather_async(const std::vector<torch::Tensor>& tensors, const std::string& name,
                                                  const ProcessSet& process_set) {
  const std::string group = torch_adapter::name_or_auto(name, "grouped_allgather", process_set);
  GroupInputs in = group_inputs(tensors, group, "grouped allgather");
  return allocated_outputs(current_runtime()->grouped_allgather_async(in.names, in.tensors,
                                                                      torch_adapter::torch_allocation(process_set, in.device)));
}

std::vector<torch::Tensor> grouped_allgather(const std::vector<torch::Tensor>& tensors, const std::string& name,
                                             const ProcessSet& process_set) {
  if (torch_adapter::any_wants_grad(tensors)) {
    const std::string group = torch_adapter::name_or_auto(name, "grouped_allgather", process_set);
    return torch_adapter::grouped_allgather_with_grad(tensors, group, process_set);
  }
  return wait_all(grouped_allgather_async(tensors, name, process_set));
}

std::vector<TensorHandle> grouped_reducescatter_async(const std::vector<torch::Tensor>& tensors,
                                                      const std::string& name, const AllreduceOptions& options,
                                                      const ProcessSet& process_set) {
  const std::string group = torch_adapter::name_or_auto(name, "grouped_reducescatter", process_set);
  GroupInputs in = group_inputs(tensors, group, "grouped reducescatter");
  return allocated_outputs(current_runtime()->grouped_reducescatter_async(
      in.names, in.tensors, options, torch_adapter::torch_allocation(process_set, in.device)));
}

std::vector<torch::Tensor> grouped_reducescatter(const std::vector<torch::Tensor>& tensors, const std::string& name,
                                                 const AllreduceOptions& options, const ProcessSet& process_set) {
  if (torch_adapter::any_wants_grad(tensors)) {
    const std::string group = torch_adapter::name_or_auto(name, "grouped_reducescatter", process_set);
    return torch_adapter::grouped_reducescatter_with_grad(tensors, group, options, process_set);
  }
  return wait_all(grouped_reducescatter_async(tensors, name, options, process_set));
}

}  // namespace chorus
