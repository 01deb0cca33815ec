#include "device_buffers.h"

#include "chorus/error.h"

namespace chorus {
namespace torch_adapter {

void check_one_cuda_device(const std::vector<std::pair<std::string, torch::Device>>& devices, const std::string& what) {
  const std::pair<std::string, torch::Device>* first_cuda = nullptr;
  for (const auto& named : devices) {
    if (!named.second.is_cuda()) continue;
    if (!first_cuda) {
      first_cuda = &named;
    } else if (named.second != first_cuda->second) {
      throw InvalidArgumentError(Status::invalid_argument(
          what + ": parameter '" + named.first + "' is on " + named.second.str() + " but '" + first_cuda->first +
          "' on " + first_cuda->second.str() + "; a rank's CUDA parameters must be on one device"));
    }
  }
}

std::vector<GradientBuffer> group_gradient_buffers(const std::vector<torch::Tensor>& params,
                                                   const std::vector<size_t>& order) {
  std::vector<GradientBuffer> buffers;
  for (size_t i : order) {
    const torch::Device device = params[i].device();
    const torch::Dtype dtype = params[i].scalar_type();
    GradientBuffer* match = nullptr;
    for (GradientBuffer& b : buffers) {
      if (b.device == device && b.dtype == dtype) match = &b;
    }
    if (!match) {
      buffers.push_back(GradientBuffer{device, dtype, {}});
      match = &buffers.back();
    }
    match->members.push_back(i);
  }
  return buffers;
}

}  // namespace torch_adapter
}  // namespace chorus
