#pragma once
// The collectives as autograd functions: ops.cc routes a call here when its
// tensor requires grad, and the backward pass runs the matching collective
// (Horovod's HorovodAllreduce, HorovodAllgather, ... in torch/mpi_ops.py).
// Names are resolved by the caller (name_or_auto), so every rank's backward
// collective is "<forward name>.grad" whether or not it asked for a name.

#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/torch/ops.h"

namespace chorus {
namespace torch_adapter {

/// True when the result of a collective on `tensor` needs a gradient.
bool wants_grad(const torch::Tensor& tensor);

torch::Tensor allreduce_with_grad(const torch::Tensor& tensor, const std::string& name,
                                  const AllreduceOptions& options, const std::shared_ptr<Compression>& compression,
                                  const ProcessSet& process_set);
torch::Tensor allgather_with_grad(const torch::Tensor& tensor, const std::string& name, const ProcessSet& process_set);
torch::Tensor broadcast_with_grad(const torch::Tensor& tensor, int root_rank, const std::string& name,
                                  const ProcessSet& process_set);
AlltoallResult alltoall_with_grad(const torch::Tensor& tensor, const std::vector<int64_t>& splits,
                                  const std::string& name, const ProcessSet& process_set);
torch::Tensor reducescatter_with_grad(const torch::Tensor& tensor, const std::string& name,
                                      const AllreduceOptions& options, const ProcessSet& process_set);

/// True when any of `tensors` wants a gradient: the whole group is then
/// recorded (grouped_autograd.cc).
bool any_wants_grad(const std::vector<torch::Tensor>& tensors);

std::vector<torch::Tensor> grouped_allreduce_with_grad(const std::vector<torch::Tensor>& tensors,
                                                       const std::string& name, const AllreduceOptions& options,
                                                       const ProcessSet& process_set);
std::vector<torch::Tensor> grouped_allgather_with_grad(const std::vector<torch::Tensor>& tensors,
                                                       const std::string& name, const ProcessSet& process_set);
std::vector<torch::Tensor> grouped_reducescatter_with_grad(const std::vector<torch::Tensor>& tensors,
                                                           const std::string& name, const AllreduceOptions& options,
                                                           const ProcessSet& process_set);

}  // namespace torch_adapter
}  // namespace chorus
