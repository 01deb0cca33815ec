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

/// OK when `tensor` is defined, dense, on the host or a CUDA device, and of
/// a supported dtype; else an invalid argument saying which, after `what`.
Status tensor_status(const torch::Tensor& tensor, const std::string& what);
/// Throws InvalidArgumentError unless tensor_status is OK.
void check_tensor(const torch::Tensor& tensor, const std::string& what);

/// A contiguous torch::Tensor seen by the core. Holds a reference, so the
/// storage lives as long as the core needs it. A CUDA tensor names its
/// device and the calling thread's current stream on it at construction
/// (the producer's stream: the adapter wraps inputs on the enqueueing thread).
class TorchTensor final : public Tensor {
 public:
  /// `tensor` must be contiguous and checked (check_tensor).
  explicit TorchTensor(torch::Tensor tensor);
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override;
  const void* data() const override { return tensor_.data_ptr(); }
  void* mutable_data() override { return tensor_.data_ptr(); }
  int64_t size_bytes() const override { return tensor_.numel() * static_cast<int64_t>(tensor_.element_size()); }
  int device() const override { return device_; }
  void* stream() const override { return stream_; }
  const torch::Tensor& tensor() const { return tensor_; }

 private:
  torch::Tensor tensor_;
  DataType dtype_;
  int device_ = kCpuDevice;
  void* stream_ = nullptr;
};

/// `tensor` itself when contiguous, else a contiguous copy.
std::shared_ptr<TorchTensor> wrap(const torch::Tensor& tensor);
/// The torch::Tensor behind a core tensor that this adapter allocated.
torch::Tensor unwrap(const std::shared_ptr<Tensor>& tensor);

/// Outputs (allgather, alltoall, reducescatter) and zeros allocated by
/// LibTorch on `device` (the input's).
class TorchOpContext final : public OpContext {
 public:
  explicit TorchOpContext(torch::Device device = torch::kCPU) : device_(device) {}
  Status allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override;
  Status allocate_zeros(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override;

 private:
  torch::Device device_;
};

/// Hooks for an operation in `process_set` whose outputs (shape known only
/// after negotiation) LibTorch allocates on `device` (the input's).
OpHooks torch_allocation(const ProcessSet& process_set, torch::Device device);

}  // namespace torch_adapter
}  // namespace chorus
