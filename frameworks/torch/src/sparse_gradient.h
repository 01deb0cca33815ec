#pragma once
// A sparse COO tensor as one grouped allgather (Horovod's sparse allreduce)
// of three members, negotiated and completed together: "<name>.indices"
// (nnz, sparse_dim) int64, "<name>.values" (nnz, dense dims...) in the wire
// dtype, "<name>.shape" (1, ndim) int64. The core's negotiation refuses
// ranks whose values' dtype, sparse_dim or dense dimensions differ (naming
// them); the gathered shape rows catch the rest. Private to the adapter;
// DistributedOptimizer and sparse_allreduce_async use it.

#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/torch/compression.h"
#include "chorus/torch/ops.h"

namespace chorus {
namespace torch_adapter {

/// The grouped allgather in flight and what turns it back into a sparse tensor.
struct SparseGather {
  TensorHandle handle;  // the indices' (the group completes together: it stands for all three)
  TensorHandle values;
  TensorHandle shape;
  std::string name;
  torch::Dtype original_dtype = torch::kFloat32;  // the gradient's (the values travel compressed)
  std::vector<int64_t> sizes;                     // the gradient's shape
  torch::TensorOptions options;
  ProcessSet process_set;  // whose ranks the shape rows come from, in order
};

/// The group's member names: "<name>.indices", "<name>.values", "<name>.shape".
std::vector<std::string> sparse_member_names(const std::string& name);

/// `grad` (sparse, dense or undefined: none) as a sparse tensor with
/// `sparse_dim` sparse dimensions, the layout every rank sends for `param`
/// (a zeroed sparse gradient has all its dimensions sparse).
torch::Tensor with_sparse_dim(const torch::Tensor& grad, const torch::Tensor& param, int64_t sparse_dim);

/// Starts the grouped allgather of `grad`'s (sparse COO) indices, values and
/// shape under `name`; `compression` applies to the values. Values the core
/// cannot carry (their dtype, device) refuse the group: every rank fails.
SparseGather allgather_sparse_async(const torch::Tensor& grad, const std::string& name, const Compression& compression,
                                    const ProcessSet& process_set = ProcessSet());

/// Takes part in the group under `name` only to fail it (this rank's input
/// is bad: `why`): every rank's call fails, naming this rank.
SparseGather refuse_sparse(const std::string& name, const Status& why, const ProcessSet& process_set = ProcessSet());

/// Waits for all three members, and returns the sparse tensor holding every
/// rank's non-zeros (duplicate indices are summed where used), values times
/// `scale` (1 for integer values). Throws what the negotiation refused, or
/// InvalidArgumentError, the same on every rank, naming each shape the
/// ranks passed and which ranks passed it when they differ.
torch::Tensor wait_sparse(const SparseGather& gather, double scale, const Compression& compression);

}  // namespace torch_adapter
}  // namespace chorus
