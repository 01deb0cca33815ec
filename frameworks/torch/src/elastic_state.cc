// chorus/torch/elastic.h: TorchState over the LibTorch adapter's broadcasts.
#include "chorus/torch/elastic.h"

#include <sstream>

#include "chorus/torch/broadcast_state.h"
#include "chorus/torch/ops.h"

namespace chorus {

namespace {

std::vector<torch::Tensor> tensors_of(torch::nn::Module& model) {
  std::vector<torch::Tensor> out = model.parameters();
  for (const torch::Tensor& b : model.buffers()) out.push_back(b);
  return out;
}

}  // namespace

TorchState::TorchState(torch::nn::Module& model, torch::optim::Optimizer& optimizer)
    : model_(model), optimizer_(optimizer) {}

TorchState::TorchState(torch::nn::Module& model, DistributedOptimizer& optimizer)
    : model_(model), optimizer_(optimizer.optimizer()), distributed_(&optimizer) {
  register_reset_callbacks({[this] { distributed_->reset(); }});
}

void TorchState::save() {
  torch::NoGradGuard no_grad;
  saved_tensors_.clear();
  for (const torch::Tensor& t : tensors_of(model_)) saved_tensors_.push_back(t.detach().clone());
  torch::serialize::OutputArchive archive;
  optimizer_.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  saved_optimizer_ = bytes.str();
  saved_values_ = values_;
}

void TorchState::restore() {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> now = tensors_of(model_);
  for (size_t i = 0; i < now.size() && i < saved_tensors_.size(); ++i) now[i].copy_(saved_tensors_[i]);
  if (!saved_optimizer_.empty()) {
    torch::serialize::InputArchive archive;
    std::istringstream bytes(saved_optimizer_);
    archive.load_from(bytes);
    optimizer_.load(archive);
  }
  values_ = saved_values_;
  if (distributed_) distributed_->reset();  // this step's allreduces went with the old world
}

// The values travel as one int64 tensor in name order: every rank names the same.
void TorchState::sync() {
  broadcast_parameters(model_, 0);
  if (distributed_) {
    broadcast_optimizer_state(*distributed_, 0);
  } else {
    broadcast_optimizer_state(optimizer_, 0);
  }
  if (!values_.empty()) {
    torch::Tensor v = torch::empty({static_cast<int64_t>(values_.size())}, torch::kInt64);
    int64_t i = 0;
    for (const auto& [name, value] : values_) v[i++] = value;
    v = broadcast(v, 0, "chorus.elastic.torch_state.values");
    i = 0;
    for (auto& [name, value] : values_) value = v[i++].item<int64_t>();
  }
  save();
}

}  // namespace chorus
