#pragma once
// Checks of the C ABI's enum arguments, on the integer a C caller passed.

#include <string>
#include <type_traits>

#include "chorus/c_api.h"
#include "chorus/types.h"

namespace chorus::detail {

// The C enums have `int` as their fixed underlying type in C++ (c_api.h),
// so reading one that holds any integer is defined; the integer is checked
// here, before it becomes a chorus::DataType or chorus::ReduceOp.
static_assert(std::is_same_v<std::underlying_type_t<chorus_dtype>, int>);
static_assert(std::is_same_v<std::underlying_type_t<chorus_reduce_op>, int>);

// "" when `dtype` names a chorus_dtype, else the message for argument `dtype`.
inline std::string bad_dtype(chorus_dtype dtype) {
  const int raw = static_cast<int>(dtype);
  if (chorus::is_valid_dtype(raw)) return "";
  return "unknown dtype " + std::to_string(raw) + " in argument 'dtype' (a chorus_dtype is 0.." +
         std::to_string(static_cast<int>(chorus::DataType::kBool)) + ")";
}

inline std::string bad_reduce_op(chorus_reduce_op op) {
  const int raw = static_cast<int>(op);
  if (chorus::is_valid_reduce_op(raw)) return "";
  return "unknown reduce op " + std::to_string(raw) + " in argument 'op' (a chorus_reduce_op is 0.." +
         std::to_string(static_cast<int>(chorus::ReduceOp::kProduct)) + ")";
}

}  // namespace chorus::detail
