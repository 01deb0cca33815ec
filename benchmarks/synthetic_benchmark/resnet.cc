#include "resnet.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>

namespace chorus_examples {

namespace F = torch::nn::functional;
namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

nn::Sequential make_layer(int64_t in, int64_t out, int64_t stride) {
  return nn::Sequential(BasicBlock(in, out, stride), BasicBlock(out, out, 1));
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride) {
  conv1_ = register_module("conv1", conv(in_channels, out_channels, 3, stride, 1));
  bn1_ = register_module("bn1", nn::BatchNorm2d(out_channels));
  conv2_ = register_module("conv2", conv(out_channels, out_channels, 3, 1, 1));
  bn2_ = register_module("bn2", nn::BatchNorm2d(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    downsample_ = register_module(
        "downsample", nn::Sequential(conv(in_channels, out_channels, 1, stride, 0), nn::BatchNorm2d(out_channels)));
  }
}

torch::Tensor BasicBlockImpl::forward(torch::Tensor x) {
  auto out = torch::relu(bn1_->forward(conv1_->forward(x)));
  out = bn2_->forward(conv2_->forward(out));
  out += downsample_ ? downsample_->forward(x) : x;
  return torch::relu(out);
}

ResNet18Impl::ResNet18Impl(int64_t num_classes) {
  conv1_ = register_module("conv1", conv(3, 64, 7, 2, 3));
  bn1_ = register_module("bn1", nn::BatchNorm2d(64));
  layer1_ = register_module("layer1", make_layer(64, 64, 1));
  layer2_ = register_module("layer2", make_layer(64, 128, 2));
  layer3_ = register_module("layer3", make_layer(128, 256, 2));
  layer4_ = register_module("layer4", make_layer(256, 512, 2));
  fc_ = register_module("fc", nn::Linear(512, num_classes));

  // torchvision's initialization: He init for convolutions, BN as identity.
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

torch::Tensor ResNet18Impl::forward(torch::Tensor x) {
  x = torch::relu(bn1_->forward(conv1_->forward(x)));
  x = F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
  x = layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(x))));
  x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1));
  return fc_->forward(x.flatten(1));
}

}  // namespace chorus_examples
