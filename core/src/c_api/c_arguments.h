#pragma once
// Checks of the C ABI's arguments: enums on the integer a C caller passed,
// counts and the pointers that go with them.

#include <string>
#include <type_traits>

#include "chorus/c_api.h"
#include "chorus/options.h"
#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus::detail {

// The C enums have `int` as their fixed underlying type in C++ (c_api.h),
// so reading one that holds any integer is defined; the integer is checked
// here, before it becomes a chorus::DataType or chorus::ReduceOp.
static_assert(std::is_same_v<std::underlying_type_t<chorus_dtype>, int>);
static_assert(std::is_same_v<std::underlying_type_t<chorus_reduce_op>, int>);
static_assert(std::is_same_v<std::underlying_type_t<chorus_collective>, int>);
static_assert(static_cast<int>(Collective::kAlltoall) == CHORUS_COLLECTIVE_ALLTOALL &&
              static_cast<int>(Collective::kReducescatter) == CHORUS_COLLECTIVE_REDUCESCATTER &&
              static_cast<int>(Collective::kAllgather) == CHORUS_COLLECTIVE_ALLGATHER &&
              static_cast<int>(Collective::kBroadcast) == CHORUS_COLLECTIVE_BROADCAST);

// OK when `dtype` names a chorus_dtype; else an invalid argument whose
// message is `what` followed by the argument and its value.
inline Status check_dtype(chorus_dtype dtype, const std::string& what) {
  const int raw = static_cast<int>(dtype);
  if (chorus::is_valid_dtype(raw)) return Status::ok();
  return Status::invalid_argument(what + "unknown dtype " + std::to_string(raw) +
                                  " in argument 'dtype' (a chorus_dtype is 0.." +
                                  std::to_string(static_cast<int>(chorus::DataType::kInt16)) + ")");
}

inline Status check_reduce_op(chorus_reduce_op op, const std::string& what) {
  const int raw = static_cast<int>(op);
  if (chorus::is_valid_reduce_op(raw)) return Status::ok();
  return Status::invalid_argument(what + "unknown reduce op " + std::to_string(raw) +
                                  " in argument 'op' (a chorus_reduce_op is 0.." +
                                  std::to_string(static_cast<int>(chorus::ReduceOp::kAdasum)) + ")");
}

inline Status check_collective(chorus_collective kind, const std::string& what) {
  const int raw = static_cast<int>(kind);
  if (raw >= CHORUS_COLLECTIVE_ALLREDUCE && raw <= CHORUS_COLLECTIVE_ALLTOALL) return Status::ok();
  return Status::invalid_argument(what + "unknown collective " + std::to_string(raw) +
                                  " in argument 'kind' (a chorus_collective is 0..4)");
}

// The checks of an allreduce's arguments (host or device): `what` names the
// call and the tensor.
inline Status check_allreduce_arguments(const std::string& what, const void* input, const void* output, int64_t count,
                                        chorus_dtype dtype, chorus_reduce_op op) {
  if (count < 0) return Status::invalid_argument(what + "count " + std::to_string(count) + " is negative");
  if (count > 0 && (input == nullptr || output == nullptr)) return Status::invalid_argument(what + "input or output is NULL");
  if (Status s = check_dtype(dtype, what); !s.is_ok()) return s;
  return check_reduce_op(op, what);
}

// The checks of a broadcast's buffer (host or device).
inline Status check_buffer_arguments(const std::string& what, const void* buffer, int64_t count, chorus_dtype dtype) {
  if (count < 0) return Status::invalid_argument(what + "count " + std::to_string(count) + " is negative");
  if (count > 0 && buffer == nullptr) return Status::invalid_argument(what + "buffer is NULL");
  return check_dtype(dtype, what);
}

// The checks of an alltoall's splits (host or device): NULL with a count, or
// a negative count.
inline Status check_splits_arguments(const std::string& what, const int64_t* splits, int nsplits) {
  if (nsplits < 0) return Status::invalid_argument(what + "nsplits " + std::to_string(nsplits) + " is negative");
  if (splits == nullptr && nsplits != 0) return Status::invalid_argument(what + "splits is NULL");
  return Status::ok();
}

// A reduction's options from the C arguments (the op already checked).
inline AllreduceOptions reduction(chorus_reduce_op op, double prescale, double postscale) {
  AllreduceOptions options;
  options.op = static_cast<ReduceOp>(op);
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  return options;
}

}  // namespace chorus::detail
