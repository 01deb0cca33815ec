// Grouped allgather and reducescatter on torch::Tensor: the members are
// negotiated and complete as one, and LibTorch allocates their outputs.
#include <torch/torch.h>

#include "auto_name.h"
#include "autograd_ops.h"
#include "chorus/torch/ops.h"
#include "torch_tensor.h"

namespace chorus {

namespace {

// Names "<group>.<i>" and checked, contiguous inputs for the core, or why
// this rank refuses them (`refused`: negotiated, so every rank fails).
struct GroupInputs {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Tensor>> tensors;
  torch::Device device = torch::kCPU;  // where LibTorch allocates the outputs
  Status refused;
};

GroupInputs group_inputs(const std::vector<torch::Tensor>& tensors, const std::string& group, const char* what) {
  GroupInputs in;
  for (size_t i = 0; i < tensors.size(); ++i) in.names.push_back(group + "." + std::to_string(i));
  for (size_t i = 0; i < tensors.size() && in.refused.is_ok(); ++i) {
    const std::string member = std::string(what) + " of tensor '" + in.names[i] + "'";
    in.refused = torch_adapter::tensor_status(tensors[i], member);
    // One OpContext allocates every member's output, on one device.
    if (in.refused.is_ok() && i > 0 && tensors[i].device() != tensors[0].device()) {
      in.refused = Status::invalid_argument(member + ": it is on " + tensors[i].device().str() + " but '" +
                                            in.names.front() + "' on " + tensors[0].device().str() +
                                            "; a group is on one device");
    }
    if (in.refused.is_ok()) in.tensors.push_back(torch_adapter::wrap(tensors[i]));
  }
  if (!tensors.empty() && in.refused.is_ok()) in.device = tensors[0].device();
  return in;
}

// A member this rank refuses fails the group on every rank.
std::vector<TensorHandle> refused_group(Collective kind, const GroupInputs& in, const ProcessSet& process_set) {
  std::vector<TensorHandle> out;
  for (const Handle& h : current_runtime()->refuse_group_async(kind, in.names, in.refused.message(), process_set)) {
    out.emplace_back(h, nullptr);
  }
  return out;
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
  if (!in.refused.is_ok()) return refused_group(Collective::kAllgather, in, process_set);
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
  if (!in.refused.is_ok()) return refused_group(Collective::kReducescatter, in, process_set);
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
