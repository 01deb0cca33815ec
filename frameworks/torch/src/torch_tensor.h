#pragma once
// torch::Tensor as the core's chorus::Tensor, and an OpContext that
// allocates in LibTorch's allocator. Private to the adapter.

#include <memory>
#include <string>

#include <torch/types.h>

#include "chorus/options.h"
#include "chorus/tensor.h"

namespace chorus {
namespace torch_adapter {

/// The core's dtype for a LibTorch dtype; throws InvalidArgumentError naming
/// `what` (e.g. "allreduce of tensor 'fc1.weight'") for unsupported ones.
DataType to_chorus_dtype(torch::Dtype dtype, const std::string& what);
torch::Dtype to_torch_dtype(DataType dtype);

/// Throws InvalidArgumentError unless `tensor` is defined, on the host and
/// of a supported dtype.
void check_tensor(const torch::Tensor& tensor, const std::string& what);

/// A contiguous host torch::Tensor seen by the core. Holds a reference, so
/// the storage lives as long as the core needs it.
class TorchTensor final : public Tensor {
 public:
  /// `tensor` must be contiguous and checked (check_tensor).
  explicit TorchTensor(torch::Tensor tensor);
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override;
  const void* data() const override { return tensor_.data_ptr(); }
  void* mutable_data() override { return tensor_.data_ptr(); }
  int64_t size_bytes() const override { return tensor_.numel() * static_cast<int64_t>(tensor_.element_size()); }
  const torch::Tensor& tensor() const { return tensor_; }

 private:
  torch::Tensor tensor_;
  DataType dtype_;
};

/// `tensor` itself when contiguous, else a contiguous copy.
std::shared_ptr<TorchTensor> wrap(const torch::Tensor& tensor);
/// The torch::Tensor behind a core tensor that this adapter allocated.
torch::Tensor unwrap(const std::shared_ptr<Tensor>& tensor);

/// Outputs (allgather, alltoall, reducescatter) and zeros allocated by LibTorch.
class TorchOpContext final : public OpContext {
 public:
  Status allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override;
  Status allocate_zeros(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override;
};

/// Hooks for an operation in `process_set` whose outputs (shape known only
/// after negotiation) LibTorch allocates.
OpHooks torch_allocation(const ProcessSet& process_set);

}  // namespace torch_adapter
}  // namespace chorus
