#include "device/cuda/nccl_plan.h"

#include <sstream>

#include "dataplane/chunks.h"

namespace chorus::detail::gpu {

bool PlanStep::operator==(const PlanStep& o) const {
  return kind == o.kind && comm == o.comm && src == o.src && dst == o.dst && count == o.count && op == o.op && peer == o.peer &&
         factor == o.factor && divisor == o.divisor && tensors == o.tensors;
}

namespace {

BufferRef in(int32_t t, int64_t offset = 0) { return {BufferKind::kInput, t, offset}; }
BufferRef out(int32_t t, int64_t offset = 0) { return {BufferKind::kOutput, t, offset}; }
BufferRef fusion(int64_t offset = 0) { return {BufferKind::kFusion, 0, offset}; }

ReduceOp on_the_wire(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

PlanStep call(StepKind kind, BufferRef src, BufferRef dst, int64_t count, int32_t peer = -1,
              ReduceOp op = ReduceOp::kSum) {
  PlanStep s;
  s.kind = kind;
  s.src = src;
  s.dst = dst;
  s.count = count;
  s.peer = peer;
  s.op = op;
  return s;
}

PlanStep scale(BufferRef src, BufferRef dst, int64_t count, double factor, int64_t divisor) {
  PlanStep s = call(StepKind::kScale, src, dst, count);
  s.factor = factor;
  s.divisor = divisor;
  return s;
}

PlanStep marker(StepKind kind) { return call(kind, {}, {}, 0); }

/// Elements per row of the first dimension (1 for a scalar or 1-d tensor).
int64_t row_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::vector<int64_t> with_rows(int64_t rows, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s = shape.empty() ? std::vector<int64_t>{rows} : shape;
  s[0] = rows;
  return s;
}

/// Postscale and Average's divisor on the result, when they change it.
void add_postscale(NcclPlan& plan, const Request& r, int32_t t, int64_t count, int size) {
  const int64_t divisor = r.op == ReduceOp::kAverage ? size : 1;
  if (count > 0 && (r.postscale != 1.0 || divisor != 1)) plan.steps.push_back(scale(out(t), out(t), count, r.postscale, divisor));
}

/// One tensor, or several large ones: reduced where they lie.
void plan_allreduce_in_place(NcclPlan& plan, const std::vector<Request>& requests, int size) {
  const Request& r = requests.front();
  const bool grouped = requests.size() > 1;
  for (size_t t = 0; t < requests.size(); ++t)  // prescale into the output: the caller's input stays as it was
    if (r.prescale != 1.0 && requests[t].num_elements() > 0)
      plan.steps.push_back(scale(in(int32_t(t)), out(int32_t(t)), requests[t].num_elements(), r.prescale, 1));
  if (grouped) plan.steps.push_back(marker(StepKind::kGroupStart));
  for (size_t t = 0; t < requests.size(); ++t) {
    const int32_t ti = int32_t(t);
    const int64_t n = requests[t].num_elements();
    if (n > 0) plan.steps.push_back(call(StepKind::kAllReduce, r.prescale != 1.0 ? out(ti) : in(ti), out(ti), n, -1, on_the_wire(r.op)));
  }
  if (grouped) plan.steps.push_back(marker(StepKind::kGroupEnd));
  for (size_t t = 0; t < requests.size(); ++t) add_postscale(plan, r, int32_t(t), requests[t].num_elements(), size);
}

Status plan_allreduce_fused(NcclPlan& plan, const std::vector<Request>& requests, int size) {
  const Request& r = requests.front();
  std::vector<int64_t> counts;
  for (const auto& q : requests) counts.push_back(q.num_elements());
  std::string error;
  if (!plan_copies(counts, dtype_size(r.dtype), kMaxCopiesPerLaunch, &plan.copies, &error))
    return Status::internal("fusion layout of a device allreduce: " + error);
  plan.piece_counts = counts;
  PlanStep pack = marker(StepKind::kPack), unpack = marker(StepKind::kUnpack);
  for (size_t t = 0; t < requests.size(); ++t) pack.tensors.push_back(int32_t(t));
  unpack.tensors = pack.tensors;
  pack.factor = r.prescale;
  unpack.factor = r.postscale;
  unpack.divisor = r.op == ReduceOp::kAverage ? size : 1;
  plan.fusion_bytes = plan.copies.buffer_bytes;
  const int64_t count = plan.copies.buffer_bytes / dtype_size(r.dtype);  // padding included: never read back
  plan.steps.push_back(pack);
  if (count > 0) plan.steps.push_back(call(StepKind::kAllReduce, fusion(), fusion(), count, -1, on_the_wire(r.op)));
  plan.steps.push_back(unpack);
  return Status::ok();
}

/// Hierarchical: every tensor packed (padded to a multiple of the ranks per
/// host), reduced over the host onto this rank's shard, the shard over the
/// hosts, gathered back over the host; the padding is reduced, never read.
Status plan_allreduce_hierarchical(NcclPlan& plan, const std::vector<Request>& requests, int size,
                                   const HostPlace& host) {
  Status s = plan_allreduce_fused(plan, requests, size);
  if (!s.is_ok()) return s;
  const int64_t esize = dtype_size(plan.dtype), per_host = host.ranks_per_host;
  const int64_t packed = plan.copies.buffer_bytes / esize;
  // Each shard starts aligned as the fusion buffer's pieces do (3 ranks a
  // host would otherwise put NCCL on odd offsets).
  const int64_t align = kFusionAlignment / esize;
  const int64_t shard = ((packed + per_host - 1) / per_host + align - 1) / align * align;
  plan.fusion_bytes = padded_bytes(shard * per_host * esize);
  const PlanStep pack = plan.steps.front(), unpack = plan.steps.back();
  plan.steps = {pack};
  if (shard > 0) {
    const BufferRef mine = fusion(host.place * shard * esize);
    const ReduceOp op = on_the_wire(requests.front().op);
    plan.steps.push_back(call(StepKind::kReduceScatter, fusion(), mine, shard, -1, op));
    plan.steps.back().comm = CommScope::kHost;
    plan.steps.push_back(call(StepKind::kAllReduce, mine, mine, shard, -1, op));
    plan.steps.back().comm = CommScope::kAcrossHosts;
    plan.steps.push_back(call(StepKind::kAllGather, mine, fusion(), shard));
    plan.steps.back().comm = CommScope::kHost;
  }
  plan.steps.push_back(unpack);
  return Status::ok();
}

Status plan_allreduce(NcclPlan& plan, const Response& response, const std::vector<Request>& requests, int size,
                      const HostPlace* hierarchy) {
  if (!response.joined_specs.empty())
    return Status::invalid_argument("allreduce of device tensor '" + requests.front().name +
                                    "' while some ranks have joined: join() supports host tensors only");
  if (hierarchy != nullptr) return plan_allreduce_hierarchical(plan, requests, size, *hierarchy);
  bool all_large = true;
  for (const auto& q : requests) all_large = all_large && q.num_elements() * dtype_size(q.dtype) >= kNoCopyMinBytes;
  if (requests.size() == 1 || all_large) {
    plan_allreduce_in_place(plan, requests, size);
    return Status::ok();
  }
  return plan_allreduce_fused(plan, requests, size);
}

/// Every rank's rows into every tensor's output: one ncclAllGather where all
/// ranks send the same rows, else a group of ncclBroadcast from each rank
/// straight into its place in the output (no padding, no compaction).
Status plan_allgather(NcclPlan& plan, const Response& response, const std::vector<Request>& requests, int rank,
                      int size) {
  const size_t n = size_t(size);
  if (response.first_dims.size() != requests.size() * n)
    return Status::internal("a device allgather response carries " + std::to_string(response.first_dims.size()) +
                            " first dimensions for " + std::to_string(requests.size()) + " tensors of " +
                            std::to_string(size) + " ranks");
  plan.steps.push_back(marker(StepKind::kGroupStart));
  for (size_t t = 0; t < requests.size(); ++t) {
    const int32_t ti = int32_t(t);
    const int64_t row = row_elements(requests[t].shape);
    const int64_t* dims = &response.first_dims[t * n];
    int64_t total = 0;
    bool equal = true;
    for (size_t r = 0; r < n; ++r) {
      total += dims[r];
      equal = equal && dims[r] == dims[0];
    }
    plan.output_shapes.push_back(with_rows(total, requests[t].shape));
    if (equal) {
      if (dims[0] * row > 0) plan.steps.push_back(call(StepKind::kAllGather, in(ti), out(ti), dims[0] * row));
      continue;
    }
    int64_t offset = 0;
    for (size_t r = 0; r < n; ++r) {
      const int64_t count = dims[r] * row;
      if (count > 0)
        plan.steps.push_back(call(StepKind::kBroadcast, in(ti), out(ti, offset * dtype_size(requests[t].dtype)), count,
                                  int32_t(r)));
      offset += count;
    }
  }
  plan.steps.push_back(marker(StepKind::kGroupEnd));
  (void)rank;
  return Status::ok();
}

/// Rank k keeps rows even_chunk(rows, size, k), as on the CPU path: one
/// ncclReduceScatter when every block is the same size, else a group of
/// ncclReduce, one to each rank's block.
void plan_reducescatter(NcclPlan& plan, const Request& r, int rank, int size) {
  const int64_t rows = r.shape.empty() ? 1 : r.shape.front();
  const int64_t row = row_elements(r.shape);
  const int64_t esize = dtype_size(r.dtype);
  const int64_t mine = even_chunk(rows, size, rank).length * row;
  plan.output_shapes.push_back(with_rows(even_chunk(rows, size, rank).length, r.shape));
  BufferRef src = in(0);
  if (r.prescale != 1.0 && rows * row > 0) {  // the caller's input stays as it was
    plan.fusion_bytes = padded_bytes(rows * row * esize);
    plan.steps.push_back(scale(in(0), fusion(), rows * row, r.prescale, 1));
    src = fusion();
  }
  if (rows % size == 0) {
    if (mine > 0) plan.steps.push_back(call(StepKind::kReduceScatter, src, out(0), mine, -1, on_the_wire(r.op)));
  } else {
    plan.steps.push_back(marker(StepKind::kGroupStart));
    for (int k = 0; k < size; ++k) {
      const ChunkRange block = even_chunk(rows, size, k);
      BufferRef from = src;
      from.offset += block.offset * row * esize;
      if (block.length > 0)
        plan.steps.push_back(call(StepKind::kReduce, from, out(0), block.length * row, k, on_the_wire(r.op)));
    }
    plan.steps.push_back(marker(StepKind::kGroupEnd));
  }
  add_postscale(plan, r, 0, mine, size);
}

/// A group of ncclSend/ncclRecv with every rank (itself included), rows
/// from the agreed split matrix (sender s, receiver d at [s * size + d]).
Status plan_alltoall(NcclPlan& plan, const Response& response, const Request& r, int rank, int size) {
  const size_t n = size_t(size);
  if (response.splits.size() != n * n)
    return Status::internal("a device alltoall response carries " + std::to_string(response.splits.size()) +
                            " splits for " + std::to_string(size) + " ranks");
  const int64_t bytes_per_row = row_elements(r.shape) * dtype_size(r.dtype);
  const int64_t row = row_elements(r.shape);
  int64_t received = 0;
  for (size_t s = 0; s < n; ++s) {
    plan.received_splits.push_back(response.splits[s * n + size_t(rank)]);
    received += plan.received_splits.back();
  }
  plan.output_shapes.push_back(with_rows(received, r.shape));
  plan.steps.push_back(marker(StepKind::kGroupStart));
  int64_t send_at = 0, recv_at = 0;
  for (size_t p = 0; p < n; ++p) {
    const int64_t send_rows = response.splits[size_t(rank) * n + p], recv_rows = plan.received_splits[p];
    if (send_rows > 0) plan.steps.push_back(call(StepKind::kSend, in(0, send_at * bytes_per_row), {}, send_rows * row, int32_t(p)));
    if (recv_rows > 0) plan.steps.push_back(call(StepKind::kRecv, {}, out(0, recv_at * bytes_per_row), recv_rows * row, int32_t(p)));
    send_at += send_rows;
    recv_at += recv_rows;
  }
  plan.steps.push_back(marker(StepKind::kGroupEnd));
  return Status::ok();
}

}  // namespace

StatusOr<NcclPlan> plan_nccl(const Response& response, const std::vector<Request>& requests, int rank, int size,
                             const HostPlace* hierarchy) {
  if (requests.empty()) return Status::internal("a device response without tensors");
  if (size < 1 || rank < 0 || rank >= size)
    return Status::internal("plan_nccl: rank " + std::to_string(rank) + " of " + std::to_string(size));
  NcclPlan plan;
  plan.dtype = requests.front().dtype;
  const bool single = requests.size() == 1;
  Status s;
  switch (response.type) {
    case ResponseType::kAllreduce: s = plan_allreduce(plan, response, requests, size, hierarchy); break;
    case ResponseType::kAllgather: s = plan_allgather(plan, response, requests, rank, size); break;
    case ResponseType::kBroadcast:  // NCCL broadcasts out of place: no copy on the root
      if (!single) return Status::internal("a device broadcast response carries several tensors");
      if (requests[0].num_elements() > 0)
        plan.steps.push_back(call(StepKind::kBroadcast, in(0), out(0), requests[0].num_elements(), requests[0].root_rank));
      break;
    case ResponseType::kReducescatter:
      if (!single) return Status::internal("a device reducescatter response carries several tensors");
      plan_reducescatter(plan, requests[0], rank, size);
      break;
    case ResponseType::kAlltoall:
      if (!single) return Status::internal("a device alltoall response carries several tensors");
      s = plan_alltoall(plan, response, requests[0], rank, size);
      break;
    default:
      return Status::invalid_argument(std::string(collective_name(requests[0].type)) + " of device tensor '" +
                                      requests[0].name + "' is not supported on the GPU data plane");
  }
  if (!s.is_ok()) return s;
  return plan;
}

std::string describe_step(const PlanStep& step, DataType dtype) {
  static const char* kNames[] = {"GroupStart", "GroupEnd", "AllReduce", "Broadcast", "Reduce", "AllGather",
                                 "ReduceScatter", "Send", "Recv", "Pack", "Unpack", "Scale"};
  auto buf = [](const BufferRef& b) {
    const char* k = b.kind == BufferKind::kInput ? "in" : b.kind == BufferKind::kOutput ? "out" : "fusion";
    std::string s = std::string(k) + (b.kind == BufferKind::kFusion ? "" : std::to_string(b.tensor));
    return b.offset ? s + "+" + std::to_string(b.offset) : s;
  };
  std::ostringstream o;
  o << kNames[int(step.kind)];
  switch (step.kind) {
    case StepKind::kGroupStart: case StepKind::kGroupEnd: break;
    case StepKind::kPack: case StepKind::kUnpack:
      o << "(" << step.tensors.size() << " tensors, x" << step.factor << "/" << step.divisor << ")";
      break;
    case StepKind::kScale:
      o << "(" << buf(step.src) << " -> " << buf(step.dst) << ", " << step.count << ", x" << step.factor << "/" << step.divisor << ")";
      break;
    case StepKind::kSend: o << "(" << buf(step.src) << ", " << step.count << " x " << dtype_name(dtype) << ", to " << step.peer << ")"; break;
    case StepKind::kRecv: o << "(" << buf(step.dst) << ", " << step.count << " x " << dtype_name(dtype) << ", from " << step.peer << ")"; break;
    default:
      o << "(" << buf(step.src) << " -> " << buf(step.dst) << ", " << step.count << " x " << dtype_name(dtype);
      if (step.kind == StepKind::kAllReduce || step.kind == StepKind::kReduce || step.kind == StepKind::kReduceScatter)
        o << ", " << reduce_op_name(step.op);
      if (step.peer >= 0) o << ", root " << step.peer;
      o << ")";
      if (step.comm == CommScope::kHost) o << " on the host";
      if (step.comm == CommScope::kAcrossHosts) o << " across hosts";
  }
  return o.str();
}

}  // namespace chorus::detail::gpu
