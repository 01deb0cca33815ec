// Collectives on torch::Tensor: wrap, enqueue on the process-wide runtime,
// and say in a finisher how the result becomes a torch::Tensor.
#include "chorus/torch/ops.h"

#include <torch/torch.h>

#include "auto_name.h"
#include "autograd_ops.h"
#include "sparse_gradient.h"
#include "torch_tensor.h"

namespace chorus {

using torch_adapter::tensor_status;
using torch_adapter::name_or_auto;
using torch_adapter::torch_allocation;
using torch_adapter::TorchTensor;
using torch_adapter::unwrap;
using torch_adapter::wants_grad;
using torch_adapter::wrap;

namespace {

std::string describe(const char* op, const std::string& name) {
  return std::string(op) + " of tensor '" + name + "'";
}

OpHooks in_set(const ProcessSet& process_set) {
  OpHooks hooks;
  hooks.process_set = process_set;
  return hooks;
}

std::shared_ptr<TorchTensor> empty_like(const std::shared_ptr<TorchTensor>& t) {
  return std::make_shared<TorchTensor>(torch::empty(t->tensor().sizes(), t->tensor().options()));
}

// A tensor this rank cannot hand to the core (undefined, sparse, another
// device, an unsupported dtype) is refused through negotiation: the other
// ranks' calls under `name` fail too, naming this rank, instead of waiting.
TensorHandle refused(Collective kind, const std::string& name, const Status& why, const ProcessSet& process_set) {
  return TensorHandle(current_runtime()->refuse_async(kind, name, why.message(), in_set(process_set)), nullptr);
}

// The result is what the core allocated (allgather, alltoall, reducescatter).
TensorHandle::Finisher allocated_output() {
  return [](const Handle& h) { return unwrap(h.output()); };
}

// An in-place collective on `tensor`: directly when contiguous, else on a
// contiguous copy that is copied back when the caller waits.
template <typename Enqueue>
TensorHandle in_place(torch::Tensor& tensor, Enqueue enqueue) {
  auto buffer = wrap(tensor);
  Handle h = enqueue(buffer);
  torch::Tensor target = tensor;
  torch::Tensor result = buffer->tensor();
  return TensorHandle(h, [target, result](const Handle&) mutable {
    if (!result.is_same(target)) target.copy_(result);
    return target;
  });
}

}  // namespace

torch::Tensor TensorHandle::wait() const {
  handle_.wait();
  return finish_ ? finish_(handle_) : torch::Tensor();
}

torch::Tensor synchronize(const TensorHandle& handle) { return handle.wait(); }
bool poll(const TensorHandle& handle) { return handle.poll(); }

TensorHandle allreduce_async(const torch::Tensor& tensor, const std::string& name, const AllreduceOptions& options,
                             const std::shared_ptr<Compression>& compression, const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "allreduce", process_set);
  if (Status bad = tensor_status(tensor, describe("allreduce", n)); !bad.is_ok()) {
    return refused(Collective::kAllreduce, n, bad, process_set);
  }
  torch::Dtype original = tensor.scalar_type();
  torch::Tensor sent = compression ? compression->compress(tensor, &original) : tensor;
  auto input = wrap(sent);
  // A compressed copy is ours to reduce in place; the caller's tensor is not.
  auto output = input->tensor().is_same(tensor) ? empty_like(input) : input;
  Handle h = current_runtime()->allreduce_async(n, input, output, options, in_set(process_set));
  return TensorHandle(h, [output, compression, original](const Handle&) {
    return compression ? compression->decompress(output->tensor(), original) : output->tensor();
  });
}

TensorHandle allreduce_async_(torch::Tensor& tensor, const std::string& name, const AllreduceOptions& options,
                              const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "allreduce", process_set);
  if (Status bad = tensor_status(tensor, describe("allreduce", n)); !bad.is_ok()) {
    return refused(Collective::kAllreduce, n, bad, process_set);
  }
  return in_place(tensor, [&](const std::shared_ptr<TorchTensor>& t) {
    return current_runtime()->allreduce_async(n, t, t, options, in_set(process_set));
  });
}

torch::Tensor allreduce(const torch::Tensor& tensor, const std::string& name, const AllreduceOptions& options,
                        const std::shared_ptr<Compression>& compression, const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "allreduce", process_set);
  if (wants_grad(tensor)) return torch_adapter::allreduce_with_grad(tensor, n, options, compression, process_set);
  return allreduce_async(tensor, n, options, compression, process_set).wait();
}

torch::Tensor allreduce_(torch::Tensor& tensor, const std::string& name, const AllreduceOptions& options,
                         const ProcessSet& process_set) {
  return allreduce_async_(tensor, name, options, process_set).wait();
}

namespace {

// The grouped allreduce, into new tensors or (`in_place`) into the callers'
// (a non-contiguous one through a contiguous copy, copied back at the wait).
std::vector<TensorHandle> grouped_allreduce_into(const std::vector<torch::Tensor>& tensors, const std::string& name,
                                                 const AllreduceOptions& options, const ProcessSet& process_set,
                                                 bool in_place) {
  const std::string group = name_or_auto(name, "grouped_allreduce", process_set);
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Tensor>> inputs, outputs;
  std::vector<std::shared_ptr<TorchTensor>> results;
  for (size_t i = 0; i < tensors.size(); ++i) names.push_back(group + "." + std::to_string(i));
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (Status bad = tensor_status(tensors[i], describe("grouped allreduce", names[i])); !bad.is_ok()) {
      std::vector<TensorHandle> out;  // this rank's refusal fails the group on every rank
      for (const Handle& h :
           current_runtime()->refuse_group_async(Collective::kAllreduce, names, bad.message(), process_set)) {
        out.emplace_back(h, nullptr);
      }
      return out;
    }
    auto input = wrap(tensors[i]);
    auto output = in_place ? input : empty_like(input);
    inputs.push_back(input);
    outputs.push_back(output);
    results.push_back(output);
  }
  std::vector<Handle> handles = current_runtime()->grouped_allreduce_async(names, inputs, outputs, options, process_set);
  std::vector<TensorHandle> out;
  for (size_t i = 0; i < handles.size(); ++i) {
    torch::Tensor result = results[i]->tensor();
    if (!in_place) {
      out.emplace_back(handles[i], [result](const Handle&) { return result; });
      continue;
    }
    torch::Tensor target = tensors[i];
    out.emplace_back(handles[i], [target, result](const Handle&) mutable {
      if (!result.is_same(target)) target.copy_(result);
      return target;
    });
  }
  return out;
}

}  // namespace

std::vector<TensorHandle> grouped_allreduce_async(const std::vector<torch::Tensor>& tensors, const std::string& name,
                                                  const AllreduceOptions& options, const ProcessSet& process_set) {
  return grouped_allreduce_into(tensors, name, options, process_set, false);
}

std::vector<TensorHandle> grouped_allreduce_async_(std::vector<torch::Tensor>& tensors, const std::string& name,
                                                   const AllreduceOptions& options, const ProcessSet& process_set) {
  return grouped_allreduce_into(tensors, name, options, process_set, true);
}

std::vector<torch::Tensor> grouped_allreduce_(std::vector<torch::Tensor>& tensors, const std::string& name,
                                              const AllreduceOptions& options, const ProcessSet& process_set) {
  for (const TensorHandle& h : grouped_allreduce_async_(tensors, name, options, process_set)) h.wait();
  return tensors;
}

std::vector<torch::Tensor> grouped_allreduce(const std::vector<torch::Tensor>& tensors, const std::string& name,
                                             const AllreduceOptions& options, const ProcessSet& process_set) {
  if (torch_adapter::any_wants_grad(tensors)) {
    const std::string group = name_or_auto(name, "grouped_allreduce", process_set);
    return torch_adapter::grouped_allreduce_with_grad(tensors, group, options, process_set);
  }
  std::vector<torch::Tensor> results;
  for (const TensorHandle& h : grouped_allreduce_async(tensors, name, options, process_set)) results.push_back(h.wait());
  return results;
}

TensorHandle sparse_allreduce_async(const torch::Tensor& tensor, const std::string& name, ReduceOp op,
                                    const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "sparse_allreduce", process_set);
  const std::string what = describe("sparse_allreduce", n);
  Status bad;
  if (!tensor.defined() || !tensor.is_sparse()) {
    bad = Status::invalid_argument(what + ": the tensor is not a sparse (COO) tensor; use allreduce");
  } else if (op != ReduceOp::kAverage && op != ReduceOp::kSum) {
    bad = Status::invalid_argument(what + ": op " + std::string(reduce_op_name(op)) +
                                   " cannot be gathered; use Average or Sum, or allreduce the dense tensor");
  } else if (op == ReduceOp::kAverage && !torch::isFloatingType(tensor.scalar_type())) {
    // Gathered non-zeros can only be divided one by one, which is not the
    // average of integers: (1 + 1) / 2 = 1, but 1 / 2 + 1 / 2 = 0.
    bad = Status::invalid_argument(what + ": Average of " + std::string(c10::toString(tensor.scalar_type())) +
                                   " values cannot be gathered exactly; use Sum, or allreduce the dense tensor");
  } else {
    bad = tensor_status(tensor._values(), what);
  }
  // Refused as the group the other ranks negotiate ("<n>.indices", ...): their calls fail too.
  if (!bad.is_ok()) return torch_adapter::refuse_sparse(n, bad, process_set).handle;
  const torch_adapter::SparseGather gather =
      torch_adapter::allgather_sparse_async(tensor, n, *Compression::none(), process_set);
  const double scale = op == ReduceOp::kAverage ? 1.0 / process_set.size() : 1.0;
  return TensorHandle(gather.handle.handle(), [gather, scale](const Handle&) {
    return torch_adapter::wait_sparse(gather, scale, *Compression::none());
  });
}

torch::Tensor sparse_allreduce(const torch::Tensor& tensor, const std::string& name, ReduceOp op,
                               const ProcessSet& process_set) {
  return sparse_allreduce_async(tensor, name, op, process_set).wait();
}

TensorHandle allgather_async(const torch::Tensor& tensor, const std::string& name, const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "allgather", process_set);
  if (Status bad = tensor_status(tensor, describe("allgather", n)); !bad.is_ok()) {
    return refused(Collective::kAllgather, n, bad, process_set);
  }
  return TensorHandle(current_runtime()->allgather_async(n, wrap(tensor), torch_allocation(process_set, tensor.device())), allocated_output());
}

torch::Tensor allgather(const torch::Tensor& tensor, const std::string& name, const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "allgather", process_set);
  if (wants_grad(tensor)) return torch_adapter::allgather_with_grad(tensor, n, process_set);
  return allgather_async(tensor, n, process_set).wait();
}

TensorHandle broadcast_async(const torch::Tensor& tensor, int root_rank, const std::string& name,
                             const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "broadcast", process_set);
  if (Status bad = tensor_status(tensor, describe("broadcast", n)); !bad.is_ok()) {
    return refused(Collective::kBroadcast, n, bad, process_set);
  }
  auto input = wrap(tensor);
  auto output = empty_like(input);
  Handle h = current_runtime()->broadcast_async(n, input, output, root_rank, in_set(process_set));
  return TensorHandle(h, [output](const Handle&) { return output->tensor(); });
}

TensorHandle broadcast_async_(torch::Tensor& tensor, int root_rank, const std::string& name,
                              const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "broadcast", process_set);
  if (Status bad = tensor_status(tensor, describe("broadcast", n)); !bad.is_ok()) {
    return refused(Collective::kBroadcast, n, bad, process_set);
  }
  return in_place(tensor, [&](const std::shared_ptr<TorchTensor>& t) {
    return current_runtime()->broadcast_async(n, t, root_rank, in_set(process_set));
  });
}

torch::Tensor broadcast(const torch::Tensor& tensor, int root_rank, const std::string& name,
                        const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "broadcast", process_set);
  if (wants_grad(tensor)) return torch_adapter::broadcast_with_grad(tensor, root_rank, n, process_set);
  return broadcast_async(tensor, root_rank, n, process_set).wait();
}

torch::Tensor broadcast_(torch::Tensor& tensor, int root_rank, const std::string& name,
                         const ProcessSet& process_set) {
  return broadcast_async_(tensor, root_rank, name, process_set).wait();
}

TensorHandle alltoall_async(const torch::Tensor& tensor, const std::vector<int64_t>& splits, const std::string& name,
                            const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "alltoall", process_set);
  if (Status bad = tensor_status(tensor, describe("alltoall", n)); !bad.is_ok()) {
    return refused(Collective::kAlltoall, n, bad, process_set);
  }
  return TensorHandle(current_runtime()->alltoall_async(n, wrap(tensor), splits, torch_allocation(process_set, tensor.device())),
                      allocated_output());
}

AlltoallResult alltoall(const torch::Tensor& tensor, const std::vector<int64_t>& splits, const std::string& name,
                        const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "alltoall", process_set);
  if (wants_grad(tensor)) return torch_adapter::alltoall_with_grad(tensor, splits, n, process_set);
  TensorHandle h = alltoall_async(tensor, splits, n, process_set);
  AlltoallResult result;
  result.output = h.wait();
  result.received_splits = h.received_splits();
  return result;
}

TensorHandle reducescatter_async(const torch::Tensor& tensor, const std::string& name,
                                 const AllreduceOptions& options, const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "reducescatter", process_set);
  if (Status bad = tensor_status(tensor, describe("reducescatter", n)); !bad.is_ok()) {
    return refused(Collective::kReducescatter, n, bad, process_set);
  }
  return TensorHandle(current_runtime()->reducescatter_async(n, wrap(tensor), options, torch_allocation(process_set, tensor.device())),
                      allocated_output());
}

torch::Tensor reducescatter(const torch::Tensor& tensor, const std::string& name, const AllreduceOptions& options,
                            const ProcessSet& process_set) {
  const std::string n = name_or_auto(name, "reducescatter", process_set);
  if (wants_grad(tensor)) return torch_adapter::reducescatter_with_grad(tensor, n, options, process_set);
  return reducescatter_async(tensor, n, options, process_set).wait();
}

}  // namespace chorus
