#pragma once
// Outputs whose size is known only once the ranks agreed (allgather,
// reducescatter, alltoall), allocated through the adapter's OpContext.

#include <memory>
#include <vector>

#include "chorus/tensor.h"
#include "common/logging.h"
#include "engine/tensor_entry.h"

namespace chorus::detail {

/// An output allocated through the adapter, or, when that failed, scratch
/// memory: a rank whose allocation failed still takes part in the
/// collective, so the other ranks never wait for it, then reports the error.
struct OutputSlot {
  std::shared_ptr<Tensor> tensor;
  std::unique_ptr<char[]> scratch;
  Status alloc;
  void* data() { return alloc.is_ok() ? tensor->mutable_data() : scratch.get(); }
};

/// Allocates `e`'s output of `shape`; aborts the rank (naming the tensor)
/// only when not even scratch memory is left.
OutputSlot allocate_output(const TensorEntry& e, const TensorShape& shape, const Logger& logger);

/// The shape [rows, shape[1], shape[2], ...]; the elements per row go to `row_elems`.
TensorShape with_rows(int64_t rows, const std::vector<int64_t>& shape, int64_t* row_elems);

}  // namespace chorus::detail
