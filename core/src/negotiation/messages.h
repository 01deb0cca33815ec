#pragma once
// What ranks tell the coordinator (Request) and what it tells them back
// (Response), and their wire form.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "negotiation/slot_bits.h"

namespace chorus::detail {

enum class CollectiveType : int32_t {
  kAllreduce = 0,
  kBroadcast = 1,
  kAllgather = 2,
  kBarrier = 3,
  kReducescatter = 4,
  kAlltoall = 5,
  kJoin = 6,
  kAddProcessSet = 7  ///< every rank registers a process set (api/process_set_table.h)
};
constexpr int32_t kLastCollectiveType = 7;

/// Where a tensor's memory is, as far as the ranks must agree: ranks sit on
/// different GPUs, so they agree on the kind, never on the device index.
enum class DeviceKind : int32_t { kCpu = 0, kCuda = 1 };
constexpr int32_t kLastDeviceKind = 1;
const char* device_kind_name(DeviceKind kind);  ///< "CPU", "CUDA"
/// The kind of a Tensor::device() value (kCpuDevice or a CUDA index).
inline DeviceKind device_kind_of(int device) { return device == kCpuDevice ? DeviceKind::kCpu : DeviceKind::kCuda; }

/// The name every rank's join request carries.
inline const char* join_tensor_name() { return "chorus.join"; }
const char* collective_name(CollectiveType type);

/// One rank's "tensor `name` is ready here, with these properties". Each
/// member has one row in kRequestFields (negotiation/request_fields.h): its
/// place on the wire, its decode check, whether ranks must agree on it.
struct Request {
  int32_t rank = 0;
  CollectiveType type = CollectiveType::kAllreduce;
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  ReduceOp op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  /// Broadcast: the root's rank in the set, or -1 when the global rank the
  /// caller named (`named_root`) is not in the set: the coordinator then
  /// fails it on every rank, instead of one rank throwing while the others
  /// wait for it.
  int32_t root_rank = 0;
  int32_t named_root = 0;
  /// This rank's device index (its own: ranks sit on different GPUs).
  int32_t device = kCpuDevice;
  /// Tensors of a group (grouped allreduce, allgather, reducescatter) share a
  /// group name and know the group size.
  std::string group;
  int32_t group_size = 0;
  /// Alltoall: rows of the first dimension this rank sends to each rank.
  std::vector<int64_t> splits;
  /// Process-set registration: the members' global ranks, ascending.
  std::vector<int64_t> process_set_ranks;
  /// CPU or CUDA: the same on every rank (a mismatch is an error naming
  /// both sets of ranks), and part of the fusion key and cache signature.
  DeviceKind device_kind = DeviceKind::kCpu;
  /// Non-empty when this rank refused its own call before negotiation (its
  /// input, arguments or device were bad: api/collective_entries.h); it
  /// still sends this request so the ranks that called with good input do
  /// not wait: the coordinator fails the tensor on every rank, naming this
  /// rank and this message (validate_requests). The other rows then carry
  /// nothing the coordinator reads.
  std::string refused;

  int64_t num_elements() const;
  bool operator==(const Request& o) const;
};

/// True when two requests describe the same operation: every row of
/// kRequestFields the ranks must agree on (all but the rank, the name and
/// alltoall splits; for collectives whose first dimension varies
/// (collective_traits.h), not the first dimension either).
bool same_signature(const Request& a, const Request& b);

/// A rank's cache bit the coordinator could not take (the slot's content
/// changed after the epoch the rank set it at): that rank sends the full
/// request again.
struct Resend {
  int32_t rank = 0;
  int32_t slot = -1;
  uint64_t epoch = 0;  ///< the rank's cache epoch when it set the bit
  bool operator==(const Resend& o) const { return rank == o.rank && slot == o.slot && epoch == o.epoch; }
};

/// Everything one rank sends in one round.
struct RequestList {
  std::vector<Request> requests;
  /// Requests the response cache knows: one bit per slot...
  SlotBits cached;
  /// ...set against the sender's cache at this epoch.
  uint64_t cache_epoch = 0;
  bool shutdown = false;  ///< this rank is leaving
  /// Why, when not its own shutdown() (a fault of its device operations):
  /// rank 0 tells every rank this message.
  std::string shutdown_reason;

  std::string serialize() const;
  /// Validates everything it reads: enums, dimensions (non-negative, and
  /// their byte count fits 64 bits), counts, ranks; `max_slots`: the
  /// receiver's cache capacity, bits at or beyond it are refused (and cannot
  /// make the reader allocate more).
  static Status parse(const std::string& bytes, RequestList* out, size_t max_slots = size_t{1} << 30);
  bool operator==(const RequestList& o) const {
    return requests == o.requests && cached == o.cached && cache_epoch == o.cache_epoch && shutdown == o.shutdown &&
           shutdown_reason == o.shutdown_reason;
  }
};

/// The response that runs a collective has the collective's number
/// (negotiation/collective_traits.h), and one more means "fail".
enum class ResponseType : int32_t {
  kAllreduce = 0, kBroadcast = 1, kAllgather = 2, kBarrier = 3, kReducescatter = 4, kAlltoall = 5, kJoin = 6,
  kAddProcessSet = 7, kError = 8
};
constexpr int32_t kLastResponseType = 8;

/// The response type that runs a collective of `type`.
ResponseType response_type_of(CollectiveType type);

/// "Run this collective on these tensors now" (several names = fused), or
/// "fail these tensors with this message".
struct Response {
  ResponseType type = ResponseType::kAllreduce;
  std::vector<std::string> names;
  /// Tensors every rank negotiated through the response cache travel as
  /// their slots instead of names; each rank reads the names from its cache
  /// before it runs the list (BackgroundLoop::execute).
  std::vector<int32_t> slots;
  std::string error_message;
  /// Total bytes of the tensors, for fusion planning on the coordinator.
  int64_t total_bytes = 0;
  /// Allgather: every rank's first dimension, per tensor (several when
  /// fused): tensor t, rank r at [t * world_size + r].
  std::vector<int64_t> first_dims;
  /// Alltoall: every rank's splits, rank-major (sender s, receiver r at
  /// [s * world_size + r]).
  std::vector<int64_t> splits;
  /// Allreduces completed while some ranks had joined: each tensor's
  /// request, so a joined rank can take part with zeros of that shape.
  std::vector<Request> joined_specs;
  /// Join: the last rank to join.
  int32_t last_joined_rank = -1;
  /// Where the tensors are: CUDA responses run through the device
  /// operations (engine/device_operations.h), never the CPU data plane.
  DeviceKind device_kind = DeviceKind::kCpu;

  bool operator==(const Response& o) const {
    return type == o.type && device_kind == o.device_kind && names == o.names && slots == o.slots && error_message == o.error_message &&
           total_bytes == o.total_bytes && first_dims == o.first_dims && splits == o.splits &&
           joined_specs == o.joined_specs && last_joined_rank == o.last_joined_rank;
  }
};

/// Settings the coordinator's autotuner chose (CHORUS_AUTOTUNE): every rank
/// applies them when it runs the list that carries them, so all change at
/// the same point of the response order.
struct TunedSettings {
  int32_t trial = -1;  ///< the trial they are measured for; -1: the final choice
  int64_t fusion_threshold_bytes = 0;
  double fusion_wait_us = 0;
  double cycle_time_ms = 0;
  bool operator==(const TunedSettings& o) const {
    return trial == o.trial && fusion_threshold_bytes == o.fusion_threshold_bytes &&
           fusion_wait_us == o.fusion_wait_us && cycle_time_ms == o.cycle_time_ms;
  }
};

/// Everything the coordinator tells all ranks in one round; every rank runs
/// it in the same order.
struct ResponseList {
  std::vector<Response> responses;
  std::vector<Resend> resend;
  /// The coordinator's cache epoch when it planned the list: every rank's
  /// cache must be at the same epoch before it runs the list, or the slots
  /// it names would mean other tensors there (BackgroundLoop::execute).
  uint64_t cache_epoch = 0;
  bool shutdown = false;
  std::string shutdown_reason;
  std::optional<TunedSettings> tuned;  ///< only in the list where they change

  std::string serialize() const;
  /// Validates everything it reads (enums, sizes, counts, and cache slots
  /// below `max_slots`, the receiver's cache capacity); a clear error
  /// otherwise.
  static Status parse(const std::string& bytes, ResponseList* out, size_t max_slots = size_t{1} << 30);
  bool operator==(const ResponseList& o) const {
    return responses == o.responses && resend == o.resend && shutdown == o.shutdown &&
           shutdown_reason == o.shutdown_reason && cache_epoch == o.cache_epoch && tuned == o.tuned;
  }
};

}  // namespace chorus::detail
