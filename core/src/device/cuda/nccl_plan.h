#pragma once
// Which NCCL calls (and which copies around them) one device response turns
// into: a pure function of what every rank agreed on (the response and the
// tensors' agreed requests) and of this rank's number, never of where the
// tensors lie in memory. So every rank issues the same collective calls in
// the same order, and the sends of one rank meet the receives of the other
// (test/gpu/test_nccl_plan.cc checks both across ranks). The executor
// (device/cuda/nccl_launcher.cc) only walks the steps. No CUDA or NCCL type here.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "common/status_or.h"
#include "device/cuda/copy_plan.h"
#include "negotiation/messages.h"

namespace chorus::detail::gpu {

/// Tensors of a grouped/fused allreduce are reduced where they lie, one NCCL
/// call each inside ncclGroupStart/End, when every one of them is at least
/// this big; otherwise they are packed into the fusion buffer (one call).
/// A constant, so every rank makes the same choice.
constexpr int64_t kNoCopyMinBytes = int64_t{4} << 20;

enum class BufferKind : uint8_t { kInput, kOutput, kFusion };

/// A place in a buffer: tensor `tensor`'s input or output, or the fusion
/// buffer (tensor unused), plus a byte offset.
struct BufferRef {
  BufferKind kind = BufferKind::kInput;
  int32_t tensor = 0;
  int64_t offset = 0;
  bool operator==(const BufferRef& o) const { return kind == o.kind && tensor == o.tensor && offset == o.offset; }
};

enum class StepKind : uint8_t {
  kGroupStart, kGroupEnd,  // ncclGroupStart / ncclGroupEnd
  kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSend, kRecv,  // one NCCL call each
  kPack,    // the listed tensors' inputs into the fusion buffer at the copy plan's offsets, times `factor`
  kUnpack,  // out of the fusion buffer into the listed tensors' outputs, times factor / divisor
  kScale,   // count elements src -> dst (possibly in place), times factor / divisor
};

/// The communicator an NCCL call runs on: the set's own, or (hierarchical
/// allreduce) the ranks of this host, or the ranks at this rank's place on
/// every host.
enum class CommScope : uint8_t { kSet, kHost, kAcrossHosts };

/// One step. NCCL calls use src/dst/count/op/peer/comm; copies use factor/divisor.
struct PlanStep {
  StepKind kind = StepKind::kGroupStart;
  CommScope comm = CommScope::kSet;
  BufferRef src, dst;
  int64_t count = 0;           ///< elements
  ReduceOp op = ReduceOp::kSum;  ///< never Average: that is Sum, then a divisor
  int32_t peer = -1;           ///< root (Broadcast, Reduce) or peer (Send, Recv)
  double factor = 1.0;
  int64_t divisor = 1;
  std::vector<int32_t> tensors;  ///< kPack / kUnpack
  bool operator==(const PlanStep& o) const;
};

struct NcclPlan {
  DataType dtype = DataType::kFloat32;
  std::vector<PlanStep> steps;
  /// Layout of the fusion buffer for kPack / kUnpack, and the elements of
  /// each tensor it holds (every tensor of the response, in order).
  CopyPlan copies;
  std::vector<int64_t> piece_counts;
  /// Bytes of device fusion buffer the steps use (0: none).
  int64_t fusion_bytes = 0;
  /// Per tensor: the shape of the output this collective allocates
  /// (allgather, reducescatter, alltoall); empty when it writes the caller's.
  std::vector<std::vector<int64_t>> output_shapes;
  /// Alltoall: the rows this rank received from each rank.
  std::vector<int64_t> received_splits;
};

/// Where this rank sits for the hierarchical allreduce (every host holds
/// `ranks_per_host` ranks; this one is at `place` on its host).
struct HostPlace {
  int place = 0;
  int ranks_per_host = 1;
};

/// The plan of `response` run on tensors whose agreed requests are
/// `requests` (in the response's order), on rank `rank` of `size`.
/// With `hierarchy` (CHORUS_HIERARCHICAL_ALLREDUCE on hosts of equal rank
/// counts, the same on every rank), an allreduce packs into the fusion
/// buffer, padded to a multiple of the ranks per host, and runs
/// ReduceScatter on the host's communicator, AllReduce of this rank's
/// shard across the hosts, AllGather on the host's communicator.
/// An invalid argument (naming the tensor) for what NCCL cannot do here;
/// the same answer on every rank, since it depends only on agreed input.
StatusOr<NcclPlan> plan_nccl(const Response& response, const std::vector<Request>& requests, int rank, int size,
                             const HostPlace* hierarchy = nullptr);

/// "AllReduce(in0 -> out0, 12 x float32, sum)": one line per step, for
/// logs and for tests to read.
std::string describe_step(const PlanStep& step, DataType dtype);

}  // namespace chorus::detail::gpu
