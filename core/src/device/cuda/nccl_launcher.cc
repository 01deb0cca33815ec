#include "device/cuda/nccl_launcher.h"

#include "device/cuda/device_fusion.h"
#include "device/cuda/gpu_errors.h"
#include "device/cuda/nccl_comm.h"

namespace chorus::detail::gpu {

ncclDataType_t nccl_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: case DataType::kBool: return ncclUint8;
    case DataType::kInt8: return ncclInt8;
    // NCCL has no int16: moved as 2-byte elements it never reads (reductions
    // of int16 are refused before: NcclDeviceOperations::execute).
    case DataType::kInt16: return ncclFloat16;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
    case ReduceOp::kSum: case ReduceOp::kAverage: return ncclSum;
    case ReduceOp::kAdasum: break;  // refused before any plan (nccl_device_operations.cc)
  }
  return ncclSum;
}

namespace {

struct Walker {
  const NcclPlan& plan;
  const PlanBuffers& b;
  const PlanComms& comms;
  cudaStream_t stream;
  const OpDeadline& deadline;
  const std::string& what;

  char* at(const BufferRef& r) const {
    char* base = nullptr;
    switch (r.kind) {
      case BufferKind::kInput: base = const_cast<char*>(static_cast<const char*>(b.inputs.at(size_t(r.tensor)))); break;
      case BufferKind::kOutput: base = static_cast<char*>(b.outputs.at(size_t(r.tensor))); break;
      case BufferKind::kFusion: base = static_cast<char*>(b.fusion); break;
    }
    return base + r.offset;
  }

  /// Every tensor of the fused batch (the copy plan lays out all of them).
  std::vector<DevicePiece> pieces() const {
    std::vector<DevicePiece> out;
    for (size_t t = 0; t < plan.piece_counts.size(); ++t) out.push_back({b.inputs.at(t), b.outputs.at(t), plan.piece_counts[t]});
    return out;
  }

  Status copies(const PlanStep& s) const {
    CopyBatch batch;
    batch.src[0] = at(s.src);
    batch.dst[0] = at(s.dst);
    batch.count[0] = s.count;
    batch.size = 1;
    return cuda_status(launch_scaled_copies(batch, plan.dtype, CopyScale{s.factor, s.divisor}, stream),
                       "scaled copy (" + std::string(dtype_name(plan.dtype)) + ")");
  }

  ncclResult_t nccl(const PlanStep& s) const {
    const ncclDataType_t t = nccl_dtype(plan.dtype);
    const size_t n = static_cast<size_t>(s.count);
    const ncclComm_t comm = comms.of(s.comm);
    if (comm == nullptr && s.kind != StepKind::kGroupStart && s.kind != StepKind::kGroupEnd) return ncclInvalidUsage;
    switch (s.kind) {
      case StepKind::kGroupStart: return ncclGroupStart();
      case StepKind::kGroupEnd: return ncclGroupEnd();
      case StepKind::kAllReduce: return ncclAllReduce(at(s.src), at(s.dst), n, t, nccl_op(s.op), comm, stream);
      case StepKind::kBroadcast: return ncclBroadcast(at(s.src), at(s.dst), n, t, s.peer, comm, stream);
      case StepKind::kReduce: return ncclReduce(at(s.src), at(s.dst), n, t, nccl_op(s.op), s.peer, comm, stream);
      case StepKind::kAllGather: return ncclAllGather(at(s.src), at(s.dst), n, t, comm, stream);
      case StepKind::kReduceScatter:
        return ncclReduceScatter(at(s.src), at(s.dst), n, t, nccl_op(s.op), comm, stream);
      case StepKind::kSend: return ncclSend(at(s.src), n, t, s.peer, comm, stream);
      case StepKind::kRecv: return ncclRecv(at(s.dst), n, t, s.peer, comm, stream);
      default: return ncclInternalError;
    }
  }

  Status step(const PlanStep& s) const {
    switch (s.kind) {
      case StepKind::kPack: return pack_pieces(pieces(), plan.dtype, s.factor, plan.copies, b.fusion, stream);
      case StepKind::kUnpack:
        return unpack_pieces(pieces(), plan.dtype, CopyScale{s.factor, s.divisor}, plan.copies, b.fusion, stream);
      case StepKind::kScale: return copies(s);
      default: {
        const ncclResult_t r = nccl(s);
        return r == ncclSuccess ? Status::ok() : nccl_call(r, describe_step(s, plan.dtype), comms.of(s.comm));
      }
    }
  }

  /// An NCCL call's result; ncclInProgress is waited for under the deadline.
  /// (Strings are built only off the fast path: most calls return ncclSuccess.)
  Status nccl_call(ncclResult_t r, const std::string& call, ncclComm_t comm) const {
    if (r == ncclSuccess) return Status::ok();
    if (r != ncclInProgress) return nccl_status(r, call, comm);  // the caller prefixes the tensors
    const std::string state = "of " + what;
    return wait_in_progress([comm, &state] { return nccl_comm_state(comm, state); }, deadline, call);
  }
};

}  // namespace

Status launch_plan(const NcclPlan& plan, const PlanBuffers& buffers, const PlanComms& comms, cudaStream_t stream,
                   const OpDeadline& deadline, const std::string& what) {
  Walker w{plan, buffers, comms, stream, deadline, what};
  int open_groups = 0;
  for (const PlanStep& s : plan.steps) {
    Status st = w.step(s);
    if (s.kind == StepKind::kGroupStart && st.is_ok()) ++open_groups;
    if (s.kind == StepKind::kGroupEnd) --open_groups;  // closed even when it failed
    if (!st.is_ok()) {
      // Leave NCCL's (per-thread) group state balanced. This may still queue
      // the group's work; after a timeout the caller aborts the
      // communicator, which ends it, so that close is not waited for.
      for (; open_groups > 0; --open_groups) {
        const ncclResult_t r = ncclGroupEnd();
        if (st.code() != StatusCode::kTimeout) w.nccl_call(r, "ncclGroupEnd (closing after a failure)", comms.set);
      }
      return st;
    }
  }
  return Status::ok();
}

}  // namespace chorus::detail::gpu
