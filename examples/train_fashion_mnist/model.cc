#include "model.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

namespace chorus_examples {

namespace F = torch::nn::functional;

FashionNetImpl::FashionNetImpl() {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3).padding(1)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)));
  fc1_ = register_module("fc1", torch::nn::Linear(32 * 7 * 7, 128));
  fc2_ = register_module("fc2", torch::nn::Linear(128, 10));
  dropout_ = register_module("dropout", torch::nn::Dropout(0.25));
}

torch::Tensor FashionNetImpl::forward(torch::Tensor x) {
  x = F::max_pool2d(torch::relu(conv1_->forward(x)), F::MaxPool2dFuncOptions(2));  // 16 x 14 x 14
  x = F::max_pool2d(torch::relu(conv2_->forward(x)), F::MaxPool2dFuncOptions(2));  // 32 x 7 x 7
  x = dropout_->forward(torch::relu(fc1_->forward(x.flatten(1))));
  return fc2_->forward(x);
}

}  // namespace chorus_examples
