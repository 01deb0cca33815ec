#include "sparse_gradient.h"

#include <torch/torch.h>

namespace chorus {
namespace torch_adapter {

namespace {

// A copy with fresh row-major strides: view(dtype) wants them exactly, and
// contiguous() may keep odd strides on dimensions of size 1.
torch::Tensor fresh(const torch::Tensor& t, torch::IntArrayRef shape) {
  return torch::empty(shape, t.options()).copy_(t.reshape(shape));
}

// Each row's elements as bytes: (rows, ...) -> (rows, bytes per row).
torch::Tensor as_byte_rows(const torch::Tensor& t) {
  int64_t columns = 1;  // explicit: a rank may have no rows
  for (int64_t d = 1; d < t.dim(); ++d) columns *= t.size(d);
  return fresh(t, {t.size(0), columns}).view(torch::kUInt8);
}

}  // namespace

torch::Tensor with_sparse_dim(const torch::Tensor& grad, const torch::Tensor& param, int64_t sparse_dim) {
  if (grad.defined() && grad.is_sparse() && grad.sparse_dim() == sparse_dim) return grad;
  if (!grad.defined() || (grad.is_sparse() && grad._nnz() == 0)) {
    std::vector<int64_t> value_shape{0};
    for (int64_t d = sparse_dim; d < param.dim(); ++d) value_shape.push_back(param.size(d));
    // Indices on the values' device: a CUDA embedding's empty gradient too.
    const torch::TensorOptions options = param.options().requires_grad(false);
    return torch::sparse_coo_tensor(torch::empty({sparse_dim, 0}, options.dtype(torch::kLong)),
                                    torch::empty(value_shape, options), param.sizes());
  }
  return (grad.is_sparse() ? grad.to_dense() : grad).to_sparse(sparse_dim);  // rare: a replaced gradient
}

SparseGather allgather_sparse_async(const torch::Tensor& grad, const std::string& name, const Compression& compression,
                                    const ProcessSet& process_set) {
  SparseGather out;
  out.name = name;
  out.original_dtype = grad.scalar_type();
  out.sparse_dim = grad.sparse_dim();
  out.sizes = grad.sizes().vec();
  out.options = grad.options();
  const torch::Tensor values = compression.compress(grad._values(), &out.original_dtype);
  out.wire_dtype = values.scalar_type();
  const torch::Tensor indices = grad._indices().t().to(torch::kLong);  // (nnz, sparse_dim)
  // Each row ends with the values' dtype: bytes of another dtype of the
  // same width would otherwise pass for numbers.
  const torch::Tensor dtype_column =
      torch::full({indices.size(0), 1}, static_cast<int64_t>(out.wire_dtype), indices.options().dtype(torch::kUInt8));
  out.handle = allgather_async(torch::cat({as_byte_rows(indices), as_byte_rows(values), dtype_column}, 1), name,
                               process_set);
  return out;
}

torch::Tensor wait_sparse(const SparseGather& gather, double scale, const Compression& compression) {
  const torch::Tensor gathered = gather.handle.wait();
  const torch::Tensor dtypes = gathered.select(1, gathered.size(1) - 1);
  const torch::Tensor others = dtypes.masked_select(dtypes.ne(static_cast<int64_t>(gather.wire_dtype)));
  if (others.numel() > 0) {
    const auto other = static_cast<torch::Dtype>(others[0].item<int64_t>());
    throw InvalidArgumentError(Status::invalid_argument(
        "sparse allreduce of tensor '" + gather.name + "': another rank sent values of dtype " +
        std::string(c10::toString(other)) + ", this rank " + std::string(c10::toString(gather.wire_dtype)) +
        "; every rank must pass the same dtype"));
  }
  const torch::Tensor rows = gathered.slice(1, 0, gathered.size(1) - 1);
  const int64_t n = rows.size(0), index_bytes = gather.sparse_dim * static_cast<int64_t>(sizeof(int64_t));
  const torch::Tensor index_rows = rows.slice(1, 0, index_bytes), value_rows = rows.slice(1, index_bytes);
  const torch::Tensor indices = fresh(index_rows, index_rows.sizes()).view(torch::kLong).t();
  std::vector<int64_t> value_shape{n};
  value_shape.insert(value_shape.end(), gather.sizes.begin() + gather.sparse_dim, gather.sizes.end());
  torch::Tensor values = fresh(value_rows, value_rows.sizes()).view(gather.wire_dtype).reshape(value_shape);
  values = compression.decompress(values, gather.original_dtype) * scale;
  return torch::sparse_coo_tensor(indices, values, gather.sizes, gather.options);
}

}  // namespace torch_adapter
}  // namespace chorus
