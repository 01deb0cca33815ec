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

// Each row ends with this code of the tensor's layout (dtype, sparse_dim,
// a hash of the shape): rows of another layout and the same width would
// otherwise pass for this rank's indices and numbers.
int64_t layout_code(torch::Dtype dtype, int64_t sparse_dim, const std::vector<int64_t>& sizes) {
  uint64_t shape = 1469598103934665603ULL;  // FNV-1a over the sizes
  for (int64_t d : sizes) shape = (shape ^ static_cast<uint64_t>(d)) * 1099511628211ULL;
  const uint64_t code = static_cast<uint64_t>(static_cast<uint8_t>(dtype)) |
                        (static_cast<uint64_t>(sparse_dim & 0xff) << 8) | ((shape & 0xffffffffffffULL) << 16);
  return static_cast<int64_t>(code);
}

[[noreturn]] void throw_layout_mismatch(const SparseGather& gather, int64_t other) {
  const auto code = static_cast<uint64_t>(other);
  const auto dtype = static_cast<torch::Dtype>(code & 0xff);
  std::string what;
  if (dtype != gather.wire_dtype) {
    what = "values of dtype " + std::string(c10::toString(dtype)) + ", this rank " +
           std::string(c10::toString(gather.wire_dtype));
  } else if (static_cast<int64_t>((code >> 8) & 0xff) != gather.sparse_dim) {
    what = "sparse_dim " + std::to_string((code >> 8) & 0xff) + ", this rank " + std::to_string(gather.sparse_dim);
  } else {
    what = "a tensor of another shape than this rank's " + c10::str(c10::IntArrayRef(gather.sizes));
  }
  throw InvalidArgumentError(Status::invalid_argument("sparse allreduce of tensor '" + gather.name +
                                                      "': another rank sent " + what +
                                                      "; every rank must pass the same shape, sparse_dim and dtype"));
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
  out.layout = layout_code(out.wire_dtype, out.sparse_dim, out.sizes);
  const torch::Tensor indices = grad._indices().t().to(torch::kLong);  // (nnz, sparse_dim)
  const torch::Tensor layout_column = torch::full({indices.size(0), 1}, out.layout, indices.options());
  out.handle = allgather_async(
      torch::cat({as_byte_rows(indices), as_byte_rows(values), as_byte_rows(layout_column)}, 1), name, process_set);
  return out;
}

torch::Tensor wait_sparse(const SparseGather& gather, double scale, const Compression& compression) {
  const torch::Tensor gathered = gather.handle.wait();
  const int64_t width = gathered.size(1), code_bytes = static_cast<int64_t>(sizeof(int64_t));
  const torch::Tensor codes = fresh(gathered.slice(1, width - code_bytes), {gathered.size(0), code_bytes})
                                  .view(torch::kLong)
                                  .flatten();
  const torch::Tensor others = codes.masked_select(codes.ne(gather.layout));
  if (others.numel() > 0) throw_layout_mismatch(gather, others[0].item<int64_t>());
  const torch::Tensor rows = gathered.slice(1, 0, width - code_bytes);
  const int64_t n = rows.size(0), index_bytes = gather.sparse_dim * code_bytes;
  const torch::Tensor index_rows = rows.slice(1, 0, index_bytes), value_rows = rows.slice(1, index_bytes);
  const torch::Tensor indices = fresh(index_rows, index_rows.sizes()).view(torch::kLong).t();
  std::vector<int64_t> value_shape{n};
  value_shape.insert(value_shape.end(), gather.sizes.begin() + gather.sparse_dim, gather.sizes.end());
  torch::Tensor values = fresh(value_rows, value_rows.sizes()).view(gather.wire_dtype).reshape(value_shape);
  values = compression.decompress(values, gather.original_dtype);
  if (scale != 1.0) values = values * scale;  // floating values only: integers go as Sum
  return torch::sparse_coo_tensor(indices, values, gather.sizes, gather.options);
}

}  // namespace torch_adapter
}  // namespace chorus
