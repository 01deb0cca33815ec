#pragma once
// Where DistributedOptimizer's gradients live: the rule on devices and the
// flat gradient buffers' grouping. Pure functions of the parameters' devices
// and dtypes, so they are tested without a GPU. Private to the adapter.

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace chorus {
namespace torch_adapter {

/// Throws InvalidArgumentError naming two parameters when `devices` (name,
/// device pairs) hold more than one CUDA device: a rank's device
/// collectives run on one GPU (one NCCL communicator per GPU and process),
/// so a model split over GPUs within a rank is not supported. Host
/// parameters may sit beside the CUDA ones.
void check_one_cuda_device(const std::vector<std::pair<std::string, torch::Device>>& devices, const std::string& what);

/// One flat gradient buffer: the parameters (indices into the caller's
/// list, in layout order) that share a device and a dtype.
struct GradientBuffer {
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kFloat32;
  std::vector<size_t> members;
};

/// The buffers for `order` (indices into `params`, the layout order): one
/// per (device, dtype), in order of first appearance.
std::vector<GradientBuffer> group_gradient_buffers(const std::vector<torch::Tensor>& params,
                                                   const std::vector<size_t>& order);

}  // namespace torch_adapter
}  // namespace chorus
