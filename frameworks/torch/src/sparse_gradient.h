#pragma once
// A sparse COO tensor as one allgather (Horovod's sparse allreduce):
// every rank's indices and values travel as rows of bytes (each row ending
// with a code of the dtype, sparse_dim and shape), so indices and values of any dtype cross in one
// collective whose rows are this rank's non-zeros. Private to the adapter;
// DistributedOptimizer and sparse_allreduce_async use it.

#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/torch/compression.h"
#include "chorus/torch/ops.h"

namespace chorus {
namespace torch_adapter {

/// An allgather in flight and what turns its rows back into a sparse tensor.
struct SparseGather {
  TensorHandle handle;
  std::string name;
  int64_t layout = 0;  // the code each of this rank's rows ends with
  torch::Dtype wire_dtype = torch::kFloat32;      // the values as sent (compressed)
  torch::Dtype original_dtype = torch::kFloat32;  // the gradient's
  int64_t sparse_dim = 1;
  std::vector<int64_t> sizes;  // the gradient's shape
  torch::TensorOptions options;
};

/// `grad` (sparse, dense or undefined: none) as a sparse tensor with
/// `sparse_dim` sparse dimensions, the layout every rank sends for `param`
/// (a zeroed sparse gradient has all its dimensions sparse).
torch::Tensor with_sparse_dim(const torch::Tensor& grad, const torch::Tensor& param, int64_t sparse_dim);

/// Starts the allgather of `grad`'s (sparse COO) indices and values, named
/// `name`; `compression` applies to the values.
SparseGather allgather_sparse_async(const torch::Tensor& grad, const std::string& name, const Compression& compression,
                                    const ProcessSet& process_set = ProcessSet());

/// Waits, and returns the sparse tensor holding every rank's non-zeros
/// (duplicate indices are summed where used), values times `scale` (1 for
/// integer values); InvalidArgumentError when another rank's tensor has
/// another dtype, sparse_dim or shape.
torch::Tensor wait_sparse(const SparseGather& gather, double scale, const Compression& compression);

}  // namespace torch_adapter
}  // namespace chorus
