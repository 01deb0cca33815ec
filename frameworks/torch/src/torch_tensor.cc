#include "torch_tensor.h"

#include <torch/torch.h>

#include "chorus/error.h"
#include "device_stream.h"

namespace chorus {
namespace torch_adapter {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

std::vector<int64_t> dims(const TensorShape& shape) { return shape.dim_sizes(); }

// LibTorch allocation failures are exceptions; the core wants a Status.
template <typename Allocate>
Status allocate(const TensorShape& shape, DataType dtype, torch::Device device, std::shared_ptr<Tensor>* out,
                Allocate how) {
  try {
    *out = std::make_shared<TorchTensor>(
        how(dims(shape), torch::TensorOptions().dtype(to_torch_dtype(dtype)).device(device)));
    return Status::ok();
  } catch (const std::exception& e) {
    return Status::unknown_error("LibTorch could not allocate a " + std::string(dtype_name(dtype)) + " tensor of shape " +
                                 shape.to_string() + " on " + device.str() + ": " + e.what());
  }
}

}  // namespace

DataType to_chorus_dtype(torch::Dtype dtype, const std::string& what) {
  switch (dtype) {
    case torch::kUInt8: return DataType::kUInt8;
    case torch::kInt8: return DataType::kInt8;
    case torch::kInt16: return DataType::kInt16;
    case torch::kInt32: return DataType::kInt32;
    case torch::kInt64: return DataType::kInt64;
    case torch::kFloat16: return DataType::kFloat16;
    case torch::kBFloat16: return DataType::kBFloat16;
    case torch::kFloat32: return DataType::kFloat32;
    case torch::kFloat64: return DataType::kFloat64;
    case torch::kBool: return DataType::kBool;
    default:
      invalid(what + ": dtype " + std::string(c10::toString(dtype)) +
              " is not supported (supported: uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, "
              "bool)");
  }
}

torch::Dtype to_torch_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return torch::kUInt8;
    case DataType::kInt8: return torch::kInt8;
    case DataType::kInt16: return torch::kInt16;
    case DataType::kInt32: return torch::kInt32;
    case DataType::kInt64: return torch::kInt64;
    case DataType::kFloat16: return torch::kFloat16;
    case DataType::kBFloat16: return torch::kBFloat16;
    case DataType::kFloat32: return torch::kFloat32;
    case DataType::kFloat64: return torch::kFloat64;
    case DataType::kBool: return torch::kBool;
  }
  invalid("unknown chorus dtype " + std::to_string(static_cast<int>(dtype)));
}

Status tensor_status(const torch::Tensor& tensor, const std::string& what) {
  if (!tensor.defined()) return Status::invalid_argument(what + ": the tensor is undefined");
  // A CUDA tensor goes to the core as it is; a Chorus built without GPU
  // support refuses it there, naming it.
  if (!tensor.device().is_cpu() && !tensor.device().is_cuda()) {
    return Status::invalid_argument(what + ": the tensor is on " + tensor.device().str() +
                                    "; Chorus moves host (CPU) and CUDA tensors only");
  }
  if (tensor.is_sparse()) return Status::invalid_argument(what + ": sparse tensors are not supported; pass a dense tensor");
  try {
    to_chorus_dtype(tensor.scalar_type(), what);
  } catch (const InvalidArgumentError& e) {
    return e.status();
  }
  return Status::ok();
}

void check_tensor(const torch::Tensor& tensor, const std::string& what) { throw_if_error(tensor_status(tensor, what)); }

TorchTensor::TorchTensor(torch::Tensor tensor)
    : tensor_(std::move(tensor)), dtype_(to_chorus_dtype(tensor_.scalar_type(), "tensor")) {
  if (tensor_.device().is_cuda()) {
    device_ = tensor_.device().index();
    stream_ = current_cuda_stream(tensor_.device(), "tensor on " + tensor_.device().str());
  }
}

TensorShape TorchTensor::shape() const {
  const auto sizes = tensor_.sizes();
  return TensorShape(std::vector<int64_t>(sizes.begin(), sizes.end()));
}

std::shared_ptr<TorchTensor> wrap(const torch::Tensor& tensor) {
  return std::make_shared<TorchTensor>(tensor.is_contiguous() ? tensor : tensor.contiguous());
}

torch::Tensor unwrap(const std::shared_ptr<Tensor>& tensor) {
  auto* t = dynamic_cast<TorchTensor*>(tensor.get());
  if (!t) throw InternalError(Status::internal("the core returned a tensor the LibTorch adapter did not allocate"));
  return t->tensor();
}

Status TorchOpContext::allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) {
  return allocate(shape, dtype, device_, out,
                  [](std::vector<int64_t> d, torch::TensorOptions o) { return torch::empty(d, o); });
}

Status TorchOpContext::allocate_zeros(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) {
  return allocate(shape, dtype, device_, out,
                  [](std::vector<int64_t> d, torch::TensorOptions o) { return torch::zeros(d, o); });
}

OpHooks torch_allocation(const ProcessSet& process_set, torch::Device device) {
  OpHooks hooks;
  hooks.process_set = process_set;
  hooks.context = std::make_shared<TorchOpContext>(device);
  return hooks;
}

}  // namespace torch_adapter
}  // namespace chorus
