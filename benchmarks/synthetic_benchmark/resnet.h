#pragma once
/// \file resnet.h
/// ResNet-18 in torchvision's layout (BasicBlock, [2, 2, 2, 2] blocks of
/// 64-128-256-512 channels, 7x7 stride-2 stem and max pool, parameter names
/// as in torchvision). Kept with the stem unchanged for 32x32 inputs so the
/// workload is the one of Horovod's pytorch_synthetic_benchmark;
/// ddp_benchmark.py builds the same network for PyTorch DDP.

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace chorus_examples {

/// Two 3x3 convolutions with batch norm and an identity (or 1x1 projection)
/// shortcut.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // null when the shortcut is the identity
};
TORCH_MODULE(BasicBlock);

class ResNet18Impl : public torch::nn::Module {
 public:
  explicit ResNet18Impl(int64_t num_classes = 10);
  /// [N, 3, H, W] images -> [N, num_classes] logits.
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr}, layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet18);

}  // namespace chorus_examples
