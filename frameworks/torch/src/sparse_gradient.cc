#include "sparse_gradient.h"

#include <algorithm>

#include <torch/torch.h>

#include "torch_tensor.h"

namespace chorus {
namespace torch_adapter {

namespace {

// "[3, 3]".
std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

// "rank 1" or "ranks 0, 2", as the core's messages name ranks (its
// rank_text.h is not the adapter's to include).
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// " in process set 1 (ranks 0, 2)", or "" for the global set: as the core says it.
std::string in_set_text(const ProcessSet& set) {
  if (set.is_global()) return "";
  std::string out = " in process set " + std::to_string(set.id()) + " (ranks ";
  for (size_t i = 0; i < set.ranks().size(); ++i) out += (i ? ", " : "") + std::to_string(set.ranks()[i]);
  return out + ")";
}

// The gathered shape rows (one per member of the set, in rank order) all
// equal: else the same InvalidArgumentError on every rank, naming each shape
// (in order of its first rank) and the (global) ranks that passed it.
void check_same_shape(const SparseGather& gather, const torch::Tensor& gathered) {
  const torch::Tensor rows = gathered.to(torch::kCPU).contiguous();
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<int>> ranks;  // per shape
  for (int64_t r = 0; r < rows.size(0); ++r) {
    const int64_t* row = rows[r].data_ptr<int64_t>();
    std::vector<int64_t> shape(row, row + rows.size(1));
    const auto it = std::find(shapes.begin(), shapes.end(), shape);
    const size_t k = static_cast<size_t>(it - shapes.begin());
    if (it == shapes.end()) {
      shapes.push_back(std::move(shape));
      ranks.emplace_back();
    }
    const ProcessSet& set = gather.process_set;
    ranks[k].push_back(set.is_global() ? static_cast<int>(r) : set.ranks()[static_cast<size_t>(r)]);
  }
  if (shapes.size() < 2) return;
  std::string what;
  for (size_t k = 0; k < shapes.size(); ++k)
    what += (k ? "; " : "") + shape_text(shapes[k]) + " on " + rank_list(ranks[k]);
  throw InvalidArgumentError(Status::invalid_argument("sparse allreduce of tensor '" + gather.name + "'" +
                                                      in_set_text(gather.process_set) + ": the shape differs: " + what +
                                                      "; every rank must pass the same shape"));
}

TensorHandle::Finisher allocated_output() {
  return [](const Handle& done) { return unwrap(done.output()); };
}

}  // namespace

std::vector<std::string> sparse_member_names(const std::string& name) {
  return {name + ".indices", name + ".values", name + ".shape"};
}

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

SparseGather refuse_sparse(const std::string& name, const Status& why, const ProcessSet& process_set) {
  SparseGather out;
  out.name = name;
  out.process_set = process_set;
  const std::vector<Handle> handles = current_runtime()->refuse_group_async(
      Collective::kAllgather, sparse_member_names(name), why.message(), process_set);
  out.handle = TensorHandle(handles[0], nullptr);
  out.values = TensorHandle(handles[1], nullptr);
  out.shape = TensorHandle(handles[2], nullptr);
  return out;
}

SparseGather allgather_sparse_async(const torch::Tensor& grad, const std::string& name, const Compression& compression,
                                    const ProcessSet& process_set) {
  SparseGather out;
  out.original_dtype = grad.scalar_type();
  const torch::Tensor values = compression.compress(grad._values(), &out.original_dtype);  // (nnz, dense dims...)
  if (Status bad = tensor_status(values, "sparse allreduce of tensor '" + name + "'"); !bad.is_ok()) {
    return refuse_sparse(name, bad, process_set);
  }
  out.name = name;
  out.sizes = grad.sizes().vec();
  out.options = grad.options();
  out.process_set = process_set;
  const torch::Tensor indices = grad._indices().t().to(torch::kLong);  // (nnz, sparse_dim)
  const torch::Tensor shape = torch::tensor(out.sizes, torch::kLong).reshape({1, grad.dim()}).to(grad.device());
  const std::vector<std::shared_ptr<Tensor>> members = {wrap(indices), wrap(values), wrap(shape)};
  const std::vector<Handle> handles = current_runtime()->grouped_allgather_async(
      sparse_member_names(name), members, torch_allocation(process_set, grad.device()));
  out.handle = TensorHandle(handles[0], allocated_output());
  out.values = TensorHandle(handles[1], allocated_output());
  out.shape = TensorHandle(handles[2], allocated_output());
  return out;
}

torch::Tensor wait_sparse(const SparseGather& gather, double scale, const Compression& compression) {
  const torch::Tensor indices = gather.handle.wait();  // (rows, sparse_dim): every rank's, in rank order
  torch::Tensor values = gather.values.wait();
  check_same_shape(gather, gather.shape.wait());
  values = compression.decompress(values, gather.original_dtype);
  if (scale != 1.0) values = values * scale;  // floating values only: integers go as Sum
  return torch::sparse_coo_tensor(indices.t(), values, gather.sizes, gather.options);
}

}  // namespace torch_adapter
}  // namespace chorus
