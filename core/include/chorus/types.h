#pragma once
/// \file types.h
/// Element types, reduction operations and shapes shared by the core and adapters.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "chorus/export.h"

namespace chorus {

/// Element type of a tensor. Values match `chorus_dtype` in c_api.h.
enum class DataType : int {
  kUInt8 = 0,
  kInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kBFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kBool = 8,
  kInt16 = 9,  ///< appended (ABI 11): the values above keep their numbers
};

/// Reduction applied by allreduce. Values match `chorus_reduce_op` in c_api.h.
enum class ReduceOp : int {
  kSum = 0,
  kAverage = 1,  ///< sum, then divided by the number of ranks (folded into postscale)
  kMin = 2,
  kMax = 3,
  kProduct = 4,
  /// Adaptive summation (Horovod's hvd.Adasum), float types only, allreduce
  /// only: pairs of vectors combine as (1 - a.b/2|a|^2) a + (1 - a.b/2|b|^2) b
  /// per tensor, over a tree of the ranks (any rank count; docs/api.md).
  kAdasum = 5,
};

/// Bytes per element.
CHORUS_API int64_t dtype_size(DataType dtype);
/// "float32", "bfloat16", ...
CHORUS_API const char* dtype_name(DataType dtype);
/// "sum", "average", ...
CHORUS_API const char* reduce_op_name(ReduceOp op);
/// True for float16, bfloat16, float32, float64.
CHORUS_API bool is_floating(DataType dtype);
/// True when `value` names a DataType (used to validate input from the C ABI).
CHORUS_API bool is_valid_dtype(int value);
CHORUS_API bool is_valid_reduce_op(int value);

/// Device id of host memory.
constexpr int kCpuDevice = -1;

/// Shape of a tensor: a list of 64-bit dimensions. A scalar has no dimensions
/// and one element.
class CHORUS_API TensorShape {
 public:
  TensorShape() = default;
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int dims() const { return static_cast<int>(dims_.size()); }
  int64_t dim_size(int i) const { return dims_.at(static_cast<size_t>(i)); }
  const std::vector<int64_t>& dim_sizes() const { return dims_; }
  void add_dim(int64_t d) { dims_.push_back(d); }
  /// Product of the dimensions (1 for a scalar).
  int64_t num_elements() const;
  /// "[17, 17, 17]"
  std::string to_string() const;

  bool operator==(const TensorShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const TensorShape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace chorus
