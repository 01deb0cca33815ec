#include "comm/mpi/mpi_types.h"

#include "kernels/reduce_kernels.h"

namespace chorus::detail {

namespace {

// MPI user functions carry no context, so one instantiation per (dtype, op).
template <DataType D, ReduceOp O>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, *len, D, O);
}

template <DataType D>
Status create_ops(MPI_Op (&ops)[5]) {
  MPI_User_function* fns[5] = {
      &user_reduce<D, ReduceOp::kSum>, &user_reduce<D, ReduceOp::kSum>,  // Average rides on Sum
      &user_reduce<D, ReduceOp::kMin>, &user_reduce<D, ReduceOp::kMax>,
      &user_reduce<D, ReduceOp::kProduct>};
  for (int i = 0; i < 5; ++i) {
    if (MPI_Op_create(fns[i], /*commute=*/1, &ops[i]) != MPI_SUCCESS) {
      return Status::unknown_error("MPI_Op_create failed");
    }
  }
  return Status::ok();
}

void free_op(MPI_Op* op) {
  if (*op != MPI_OP_NULL) MPI_Op_free(op);
  *op = MPI_OP_NULL;
}

}  // namespace

Status MpiTypes::create() {
  if (MPI_Type_contiguous(2, MPI_BYTE, &half_) != MPI_SUCCESS || MPI_Type_commit(&half_) != MPI_SUCCESS) {
    return Status::unknown_error("MPI_Type_contiguous failed for the 2-byte half type");
  }
  Status s = create_ops<DataType::kFloat16>(fp16_ops_);
  if (s.is_ok()) s = create_ops<DataType::kBFloat16>(bf16_ops_);
  if (s.is_ok() && (MPI_Op_create(&user_reduce<DataType::kBool, ReduceOp::kMin>, 1, &bool_and_) != MPI_SUCCESS ||
                    MPI_Op_create(&user_reduce<DataType::kBool, ReduceOp::kMax>, 1, &bool_or_) != MPI_SUCCESS)) {
    s = Status::unknown_error("MPI_Op_create failed");
  }
  return s;
}

void MpiTypes::free() {
  for (auto& op : fp16_ops_) free_op(&op);
  for (auto& op : bf16_ops_) free_op(&op);
  free_op(&bool_and_);
  free_op(&bool_or_);
  if (half_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_);
  half_ = MPI_DATATYPE_NULL;
}

MPI_Datatype MpiTypes::datatype(DataType dtype) const {
  switch (dtype) {
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return half_;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kBool: return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiTypes::op(DataType dtype, ReduceOp op) const {
  const int i = static_cast<int>(op);
  if (op == ReduceOp::kAdasum) return MPI_OP_NULL;  // not elementwise: the data plane's own algorithm
  if (dtype == DataType::kFloat16) return fp16_ops_[i];
  if (dtype == DataType::kBFloat16) return bf16_ops_[i];
  if (dtype == DataType::kBool) return op == ReduceOp::kMin ? bool_and_ : bool_or_;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAdasum: break;
  }
  return MPI_OP_NULL;
}

}  // namespace chorus::detail
