#pragma once
/// \file in_memory_dataset.h
/// A torch::data dataset held in memory as two tensors, images [N, ...] and
/// labels [N]: what the examples' dataset readers (Fashion-MNIST, CIFAR-10)
/// fill in their constructors.

#include <cstddef>

#include <torch/data/datasets/base.h>
#include <torch/data/example.h>
#include <torch/types.h>

namespace chorus_examples {

template <class Self>
class InMemoryDataset : public torch::data::datasets::Dataset<Self> {
 public:
  torch::data::Example<> get(size_t index) override {
    return {images_[static_cast<int64_t>(index)], labels_[static_cast<int64_t>(index)]};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(images_.size(0)); }

  const torch::Tensor& images() const { return images_; }
  const torch::Tensor& labels() const { return labels_; }

 protected:
  torch::Tensor images_;
  torch::Tensor labels_;
};

}  // namespace chorus_examples
