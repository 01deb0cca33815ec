#pragma once
/// \file ops.h
/// Collectives on torch::Tensor. Every call takes an optional name; ranks
/// match operations by name, so pass the same name everywhere, or leave it
/// empty and call the same operations in the same order on every rank (the
/// adapter then names them "<op>.noname.<n>", counted per operation kind).
///
/// Inputs may be non-contiguous (a contiguous copy is sent and, for in-place
/// calls, copied back). Supported dtypes: uint8, int8, int16, int32, int64,
/// float16, bfloat16, float32, float64, bool; others (uint16, complex, ...) throw
/// chorus::InvalidArgumentError naming the tensor. Host and CUDA tensors (a
/// CUDA tensor travels with the current stream of its device; results are
/// on its device, readable on any stream once waited for: docs/torch.md
/// "CUDA tensors"). Errors from the core (e.g. ranks disagreeing on a shape) throw the
/// matching chorus::Error with the core's message.
///
/// Autograd: allreduce(), allgather(), broadcast(), alltoall() and
/// reducescatter() of a tensor that requires grad (grad mode on) return a
/// tensor whose backward runs the matching collective, named
/// "<name>.grad", as Horovod's autograd functions do (docs/torch.md); every
/// rank must then run the backward. Min, Max and Product have no gradient
/// (backward throws InvalidArgumentError). grouped_allreduce,
/// grouped_allgather and grouped_reducescatter do the same for every member
/// when any requires grad (the backward grouped too). In-place and _async
/// calls record no graph.
///
/// Every call takes a trailing `process_set` (the global set by default):
/// the operation then runs among that set's members only (ranks, sizes and
/// allgather/alltoall order are the set's; a broadcast root stays a global
/// rank). Unnamed calls are counted per operation kind and set, so names
/// line up whatever sets other ranks use.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/chorus.h"
#include "chorus/torch/compression.h"

namespace chorus {

/// Horovod's op names.
constexpr ReduceOp Average = ReduceOp::kAverage;
constexpr ReduceOp Sum = ReduceOp::kSum;
constexpr ReduceOp Min = ReduceOp::kMin;
constexpr ReduceOp Max = ReduceOp::kMax;
constexpr ReduceOp Product = ReduceOp::kProduct;
/// Adaptive summation (hvd.Adasum): float gradients, allreduce only (docs/torch.md).
constexpr ReduceOp Adasum = ReduceOp::kAdasum;

/// An operation on torch tensors running in the background. Cheap to copy.
class TensorHandle {
 public:
  using Finisher = std::function<torch::Tensor(const Handle&)>;
  TensorHandle() = default;
  TensorHandle(Handle handle, Finisher finish) : handle_(std::move(handle)), finish_(std::move(finish)) {}

  /// True once the operation finished (successfully or not). Never blocks.
  bool poll() const { return handle_.poll(); }
  /// Waits, throws chorus::Error on failure, and returns the result (the
  /// in-place tensor for in-place calls).
  torch::Tensor wait() const;
  /// Alltoall: rows received from each rank, once completed.
  std::vector<int64_t> received_splits() const { return handle_.received_splits(); }
  /// The core's handle underneath.
  const Handle& handle() const { return handle_; }
  bool valid() const { return handle_.valid(); }

 private:
  Handle handle_;
  Finisher finish_;
};

/// Horovod's spelling of TensorHandle::wait() and ::poll().
torch::Tensor synchronize(const TensorHandle& handle);
bool poll(const TensorHandle& handle);

/// Allreduce into a new tensor. `compression` (none by default) applies to
/// floating tensors.
torch::Tensor allreduce(const torch::Tensor& tensor, const std::string& name = "",
                        const AllreduceOptions& options = {},
                        const std::shared_ptr<Compression>& compression = nullptr, const ProcessSet& process_set = ProcessSet());
/// Allreduce in place; returns `tensor`.
torch::Tensor allreduce_(torch::Tensor& tensor, const std::string& name = "", const AllreduceOptions& options = {},
                         const ProcessSet& process_set = ProcessSet());
TensorHandle allreduce_async(const torch::Tensor& tensor, const std::string& name = "",
                             const AllreduceOptions& options = {},
                             const std::shared_ptr<Compression>& compression = nullptr, const ProcessSet& process_set = ProcessSet());
TensorHandle allreduce_async_(torch::Tensor& tensor, const std::string& name = "",
                              const AllreduceOptions& options = {}, const ProcessSet& process_set = ProcessSet());

/// Several allreduces negotiated, fused and completed together; results in
/// input order. `name` names the group (tensor i is "<name>.<i>").
std::vector<torch::Tensor> grouped_allreduce(const std::vector<torch::Tensor>& tensors, const std::string& name = "",
                                             const AllreduceOptions& options = {}, const ProcessSet& process_set = ProcessSet());
std::vector<TensorHandle> grouped_allreduce_async(const std::vector<torch::Tensor>& tensors,
                                                  const std::string& name = "", const AllreduceOptions& options = {},
                                                  const ProcessSet& process_set = ProcessSet());
/// The same in place (Horovod's grouped_allreduce_): each result is written
/// into its tensor (a non-contiguous one when you wait); returns `tensors`.
std::vector<torch::Tensor> grouped_allreduce_(std::vector<torch::Tensor>& tensors, const std::string& name = "",
                                              const AllreduceOptions& options = {},
                                              const ProcessSet& process_set = ProcessSet());
std::vector<TensorHandle> grouped_allreduce_async_(std::vector<torch::Tensor>& tensors, const std::string& name = "",
                                                   const AllreduceOptions& options = {},
                                                   const ProcessSet& process_set = ProcessSet());

/// Horovod's sparse_allreduce_async: a sparse COO tensor's non-zeros from
/// every member, gathered in one grouped allgather (`<name>.indices`,
/// `<name>.values` and `<name>.shape`, negotiated and completed together);
/// wait() returns a sparse tensor holding all of them, not coalesced
/// (duplicate indices add up in coalesce() or to_dense()), its values
/// divided by the set's size for Average. `op` is Average (floating values)
/// or Sum (another, or Average of integers, throws InvalidArgumentError on
/// every rank) and must be the same on every rank, as in Horovod (not
/// compared). Ranks must pass the same shape, sparse_dim and dtype: a
/// dtype or sparse_dim that differs fails the call on every rank, naming the
/// ranks (negotiated); a shape that differs makes the wait throw
/// InvalidArgumentError on every rank, naming each shape and its ranks.
TensorHandle sparse_allreduce_async(const torch::Tensor& tensor, const std::string& name = "",
                                    ReduceOp op = ReduceOp::kAverage, const ProcessSet& process_set = ProcessSet());
torch::Tensor sparse_allreduce(const torch::Tensor& tensor, const std::string& name = "",
                               ReduceOp op = ReduceOp::kAverage, const ProcessSet& process_set = ProcessSet());

/// Concatenation of every rank's tensor along the first dimension, in rank
/// order (the first dimension may differ per rank).
torch::Tensor allgather(const torch::Tensor& tensor, const std::string& name = "", const ProcessSet& process_set = ProcessSet());
TensorHandle allgather_async(const torch::Tensor& tensor, const std::string& name = "", const ProcessSet& process_set = ProcessSet());

/// root_rank's tensor, as a new tensor on every rank.
torch::Tensor broadcast(const torch::Tensor& tensor, int root_rank, const std::string& name = "",
                        const ProcessSet& process_set = ProcessSet());
/// root_rank's tensor written into `tensor` on every rank; returns `tensor`.
torch::Tensor broadcast_(torch::Tensor& tensor, int root_rank, const std::string& name = "",
                         const ProcessSet& process_set = ProcessSet());
TensorHandle broadcast_async(const torch::Tensor& tensor, int root_rank, const std::string& name = "",
                             const ProcessSet& process_set = ProcessSet());
TensorHandle broadcast_async_(torch::Tensor& tensor, int root_rank, const std::string& name = "",
                              const ProcessSet& process_set = ProcessSet());

/// Result of an alltoall: the received rows and how many came from each rank.
struct AlltoallResult {
  torch::Tensor output;
  std::vector<int64_t> received_splits;
};
/// Rank i sends rows [sum(splits[0..j)), +splits[j]) of the first dimension to
/// rank j; empty splits mean equal ones.
AlltoallResult alltoall(const torch::Tensor& tensor, const std::vector<int64_t>& splits = {},
                        const std::string& name = "", const ProcessSet& process_set = ProcessSet());
TensorHandle alltoall_async(const torch::Tensor& tensor, const std::vector<int64_t>& splits = {},
                            const std::string& name = "", const ProcessSet& process_set = ProcessSet());

/// Reduction over all ranks, rank r keeping its block of the first dimension
/// (the first rows mod size ranks get one row more). Op: options.op.
torch::Tensor reducescatter(const torch::Tensor& tensor, const std::string& name = "",
                            const AllreduceOptions& options = {}, const ProcessSet& process_set = ProcessSet());
TensorHandle reducescatter_async(const torch::Tensor& tensor, const std::string& name = "",
                                 const AllreduceOptions& options = {}, const ProcessSet& process_set = ProcessSet());

/// Several allgathers negotiated and completed together (Horovod's
/// grouped_allgather); results in input order, each gathered as allgather().
/// `name` names the group (tensor i is "<name>.<i>").
std::vector<torch::Tensor> grouped_allgather(const std::vector<torch::Tensor>& tensors, const std::string& name = "",
                                             const ProcessSet& process_set = ProcessSet());
std::vector<TensorHandle> grouped_allgather_async(const std::vector<torch::Tensor>& tensors,
                                                  const std::string& name = "",
                                                  const ProcessSet& process_set = ProcessSet());
/// Several reducescatters negotiated and completed together (Horovod's
/// grouped_reducescatter); each scattered as reducescatter().
std::vector<torch::Tensor> grouped_reducescatter(const std::vector<torch::Tensor>& tensors,
                                                 const std::string& name = "", const AllreduceOptions& options = {},
                                                 const ProcessSet& process_set = ProcessSet());
std::vector<TensorHandle> grouped_reducescatter_async(const std::vector<torch::Tensor>& tensors,
                                                      const std::string& name = "",
                                                      const AllreduceOptions& options = {},
                                                      const ProcessSet& process_set = ProcessSet());

// barrier() and join() come from chorus.h.

}  // namespace chorus
