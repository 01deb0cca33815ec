#include "dataplane/data_plane.h"

#include <cstring>
#include <utility>

#include "dataplane/algorithms/ring_allreduce.h"
#include "dataplane/algorithms/shared_memory_allreduce.h"
#include "kernels/reduce_kernels.h"

namespace chorus::detail {

namespace {

// The start of the pieces' memory when each is reduced in place and begins
// where the previous one ends; nullptr otherwise. This is this rank's
// layout, which other ranks do not share: it may only decide where the bytes
// are reduced. The span and the fusion buffer then go through the same
// reduce_buffer() call with the same scaling (the ring scales each chunk on
// the rank that finishes it: a rank that scaled elsewhere would hand out
// unscaled chunks).
char* contiguous_in_place(const std::vector<ReducePiece>& pieces, int64_t esize) {
  char* start = nullptr;
  char* next = nullptr;
  for (const ReducePiece& p : pieces) {
    char* out = static_cast<char*>(p.output);
    if (out == nullptr || out != p.input) return nullptr;
    if (next != nullptr && out != next) return nullptr;
    if (start == nullptr) start = out;
    next = out + p.count * esize;
  }
  return start;
}

ReduceOp on_the_wire(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

}  // namespace

DataPlane::DataPlane(Backend& backend, const RuntimeOptions& options)
    : transport_(backend.collectives()), link_(backend.peer_link()), options_(options),
      world_size_(backend.topology().size), first_rank_on_host_(backend.topology().first_rank_on_host) {
  if (const SharedSlots* slots = backend.shared_slots()) shared_ = std::make_unique<SharedMemoryAllreduce>(*slots);
}

DataPlane::~DataPlane() = default;

AllreduceOutcome DataPlane::allreduce(const FusedAllreduce& op) {
  AllreduceOutcome out;
  const int64_t esize = dtype_size(op.dtype);
  int64_t total = 0;
  for (const ReducePiece& p : op.pieces) total += p.count;
  const PostScale scale{op.postscale, op.op == ReduceOp::kAverage ? world_size_ : 1};
  bool hierarchical = false;
  out.status = hierarchical_usable(&hierarchical, &out.warning);
  if (!out.status.is_ok()) return out;
  out.route = choose_allreduce_route(options_, op.op, total * esize, world_size_, shared_ != nullptr, hierarchical);
  out.packed = AllreduceOutcome::Clock::now();
  if (out.route == AllreduceRoute::kAdasum) {
    out.status = adasum(op, total, &out);  // sets its own times
    return out;
  }
  if (out.route == AllreduceRoute::kTransport || out.route == AllreduceRoute::kRing ||
      out.route == AllreduceRoute::kHierarchical) {
    out.status = reduce_contiguous(op, total, on_the_wire(op.op), scale, &out);  // sets its own times
    return out;
  }
  // The routes that read and write each tensor where it lies (no fusion
  // buffer). Tensors back to back go as one piece (fewer to publish for
  // zero-copy); the cut of the pieces never changes the result.
  char* span = op.pieces.size() > 1 ? contiguous_in_place(op.pieces, esize) : nullptr;
  out.in_place_span = span != nullptr;
  std::vector<ReducePiece> one;
  if (span) one.push_back(ReducePiece{span, span, total});
  const std::vector<ReducePiece>& pieces = span ? one : op.pieces;
  if (out.route == AllreduceRoute::kAlone) {
    allreduce_pieces_alone(pieces, op.dtype, op.prescale, scale);
  } else {
    const bool single_copy = out.route == AllreduceRoute::kSingleCopy;
    out.status = shared_->allreduce(pieces, op.dtype, on_the_wire(op.op), op.prescale, scale, single_copy);
    out.zero_copy = shared_->last_path() == SharedPath::kZeroCopy;
    // The route says what ran: staged (single copy refused) or zero-copy is shared memory.
    out.route = shared_->last_path() == SharedPath::kSingleCopy ? AllreduceRoute::kSingleCopy
                                                                 : AllreduceRoute::kSharedMemory;
    if (!shared_->single_copy_refusal().empty() && !single_copy_refusal_said_ && link_.rank() == 0) {
      out.warning = "single-copy shared-memory allreduce is off for this job, large allreduces stage instead: " +
                    shared_->single_copy_refusal() +
                    " (same user, Yama ptrace_scope 0 or 1 and no seccomp filter refusing process_vm_readv needed; "
                    "CHORUS_SHM_SINGLE_COPY_THRESHOLD_BYTES=-1 silences this)";
      single_copy_refusal_said_ = true;
    }
  }
  out.reduced = AllreduceOutcome::Clock::now();
  return out;
}

// The routes that reduce one contiguous buffer: a single tensor straight
// from its input into its output, tensors that lie back to back where they
// lie, anything else packed into the fusion buffer and copied back out.
Status DataPlane::reduce_contiguous(const FusedAllreduce& op, int64_t total, ReduceOp wire, PostScale scale,
                                    AllreduceOutcome* out) {
  const int64_t esize = dtype_size(op.dtype);
  const std::vector<ReducePiece>& pieces = op.pieces;
  const void* in = nullptr;
  void* result = nullptr;
  char* packed = nullptr;
  if (pieces.size() == 1) {
    in = pieces.front().input;
    result = pieces.front().output;
  } else if (char* span = contiguous_in_place(pieces, esize)) {
    in = result = span;
    out->in_place_span = true;
  } else {
    packed = static_cast<char*>(fusion_.reserve(total * esize));
    int64_t offset = 0;
    for (const ReducePiece& p : pieces) {
      scale_copy(packed + offset * esize, p.input, p.count, op.dtype, op.prescale, 1);  // prescale rides on the pack
      offset += p.count;
    }
    in = result = packed;
  }
  if (packed == nullptr && op.prescale != 1.0) {  // the caller's input stays as it was: scale into the output
    scale_copy(result, in, total, op.dtype, op.prescale, 1);
    in = result;
  }
  out->packed = AllreduceOutcome::Clock::now();
  Status s = reduce_buffer(out->route, in, result, total, op.dtype, wire, scale);
  out->reduced = AllreduceOutcome::Clock::now();
  if (packed == nullptr || !s.is_ok()) return s;
  int64_t offset = 0;
  for (const ReducePiece& p : pieces) {
    if (p.count > 0) std::memcpy(p.output, packed + offset * esize, static_cast<size_t>(p.count * esize));
    offset += p.count;
  }
  return s;
}

Status DataPlane::reduce_buffer(AllreduceRoute route, const void* in, void* out, int64_t count, DataType dtype,
                                ReduceOp op, PostScale scale) {
  RingOptions ring;
  ring.segment_bytes = options_.ring_segment_bytes;
  ring.scale_factor = scale.factor;
  ring.scale_divisor = scale.divisor;
  if (route == AllreduceRoute::kRing) {
    void* scratch = ring_scratch_.reserve(ring_scratch_bytes(count, dtype, world_size_));
    return ring_allreduce(link_, in, out, count, dtype, op, scratch, ring);
  }
  if (route == AllreduceRoute::kHierarchical) {
    void* scratch = ring_scratch_.reserve(hierarchical_scratch_bytes(*grid_, count, dtype));
    return hierarchical_allreduce(link_, *grid_, in, out, count, dtype, op, scratch, ring);
  }
  Status s = transport_.allreduce(in, out, count, dtype, op);
  if (s.is_ok() && !scale.is_identity()) scale_copy(out, out, count, dtype, scale.factor, scale.divisor);
  return s;
}

Status DataPlane::hierarchical_usable(bool* usable, std::string* warning) {
  *usable = false;
  if (!options_.hierarchical_allreduce || world_size_ <= 1) return Status::ok();
  if (!grid_) {
    HostGrid grid;
    Status s = gather_host_grid(transport_, link_.rank(), world_size_, first_rank_on_host_, &grid);
    if (!s.is_ok()) return s;
    grid_ = std::make_unique<HostGrid>(std::move(grid));
    if (!grid_->refusal.empty() && link_.rank() == 0) {
      *warning = "CHORUS_HIERARCHICAL_ALLREDUCE is on but " + grid_->refusal +
                 ": allreduces take the usual routes in this job";
    }
  }
  *usable = grid_->usable();
  return Status::ok();
}

Status DataPlane::reducescatter(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype,
                                ReduceOp op, double prescale, double postscale) {
  const void* in = input;
  std::vector<char> scaled;  // prescale needs a copy: the input is the caller's
  if (prescale != 1.0) {
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    scaled.resize(static_cast<size_t>(total * dtype_size(dtype)) + 1);
    scale_copy(scaled.data(), input, total, dtype, prescale, 1);
    in = scaled.data();
  }
  Status s = transport_.reducescatter(in, output, counts, dtype, on_the_wire(op));
  if (!s.is_ok()) return s;
  const int64_t mine = counts.empty() ? 0 : counts[static_cast<size_t>(link_.rank())];
  scale_copy(output, output, mine, dtype, postscale, op == ReduceOp::kAverage ? world_size_ : 1);
  return s;
}

}  // namespace chorus::detail
