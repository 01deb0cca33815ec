#include "negotiation/messages.h"

#include <algorithm>

#include "common/wire.h"

namespace chorus::detail {

namespace {
// Guards against parsing bytes of another protocol version.
constexpr uint32_t kRequestMagic = 0x43525132;   // "CRQ2": cache bits, not keys
constexpr uint32_t kResponseMagic = 0x43525332;  // "CRS2": cached slots
}  // namespace

const char* collective_name(CollectiveType type) {
  switch (type) {
    case CollectiveType::kAllreduce: return "allreduce";
    case CollectiveType::kBroadcast: return "broadcast";
    case CollectiveType::kAllgather: return "allgather";
    case CollectiveType::kBarrier: return "barrier";
    case CollectiveType::kReducescatter: return "reducescatter";
    case CollectiveType::kAlltoall: return "alltoall";
    case CollectiveType::kJoin: return "join";
    case CollectiveType::kAddProcessSet: return "process set registration";
  }
  return "unknown";
}

ResponseType response_type_of(CollectiveType type) {
  switch (type) {
    case CollectiveType::kAllreduce: return ResponseType::kAllreduce;
    case CollectiveType::kBroadcast: return ResponseType::kBroadcast;
    case CollectiveType::kAllgather: return ResponseType::kAllgather;
    case CollectiveType::kBarrier: return ResponseType::kBarrier;
    case CollectiveType::kReducescatter: return ResponseType::kReducescatter;
    case CollectiveType::kAlltoall: return ResponseType::kAlltoall;
    case CollectiveType::kJoin: return ResponseType::kJoin;
    case CollectiveType::kAddProcessSet: return ResponseType::kAddProcessSet;
  }
  return ResponseType::kError;
}

int64_t Request::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool Request::operator==(const Request& o) const {
  return rank == o.rank && type == o.type && name == o.name && dtype == o.dtype &&
         shape == o.shape && op == o.op && prescale == o.prescale && postscale == o.postscale &&
         root_rank == o.root_rank && named_root == o.named_root && device == o.device && group == o.group &&
         group_size == o.group_size && splits == o.splits && process_set_ranks == o.process_set_ranks;
}

bool first_dim_varies(CollectiveType type) {
  return type == CollectiveType::kAllgather || type == CollectiveType::kAlltoall;
}

namespace {
bool shapes_agree(const Request& a, const Request& b) {
  if (!first_dim_varies(a.type) || a.shape.empty() || b.shape.empty()) return a.shape == b.shape;
  return a.shape.size() == b.shape.size() && std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1);
}
}  // namespace

bool same_signature(const Request& a, const Request& b) {
  return a.type == b.type && a.dtype == b.dtype && shapes_agree(a, b) && a.op == b.op &&
         a.prescale == b.prescale && a.postscale == b.postscale && a.root_rank == b.root_rank &&
         a.named_root == b.named_root &&
         a.device == b.device && a.group == b.group && a.group_size == b.group_size &&
         a.process_set_ranks == b.process_set_ranks;
}

namespace {

void put_request(WireWriter& w, const Request& r) {
  w.put(r.rank);
  w.put(static_cast<int32_t>(r.type));
  w.put_string(r.name);
  w.put(static_cast<int32_t>(r.dtype));
  w.put_int64s(r.shape);
  w.put(static_cast<int32_t>(r.op));
  w.put(r.prescale);
  w.put(r.postscale);
  w.put(r.root_rank);
  w.put(r.named_root);
  w.put(r.device);
  w.put_string(r.group);
  w.put(r.group_size);
  w.put_int64s(r.splits);
  w.put_int64s(r.process_set_ranks);
}

bool get_request(WireReader& r, Request* q) {
  int32_t type = 0, dtype = 0, op = 0;
  r.get(&q->rank);
  r.get(&type);
  r.get_string(&q->name);
  r.get(&dtype);
  r.get_int64s(&q->shape);
  r.get(&op);
  r.get(&q->prescale);
  r.get(&q->postscale);
  r.get(&q->root_rank);
  r.get(&q->named_root);
  r.get(&q->device);
  r.get_string(&q->group);
  r.get(&q->group_size);
  r.get_int64s(&q->splits);
  r.get_int64s(&q->process_set_ranks);
  if (!is_valid_dtype(dtype) || !is_valid_reduce_op(op) || type < 0 || type > kLastCollectiveType) return false;
  q->type = static_cast<CollectiveType>(type);
  q->dtype = static_cast<DataType>(dtype);
  q->op = static_cast<ReduceOp>(op);
  return true;
}

}  // namespace

std::string RequestList::serialize() const {
  WireWriter w;
  w.put(kRequestMagic);
  w.put<uint8_t>(shutdown ? 1 : 0);
  w.put<uint32_t>(static_cast<uint32_t>(requests.size()));
  for (const Request& r : requests) put_request(w, r);
  cached.write(w);
  w.put(cache_epoch);
  return w.take();
}

Status RequestList::parse(const std::string& bytes, RequestList* out, size_t max_slots) {
  WireReader r(bytes);
  uint32_t magic = 0, count = 0;
  uint8_t shutdown = 0;
  if (!r.get(&magic) || magic != kRequestMagic) return Status::unknown_error("malformed request list (bad header)");
  r.get(&shutdown);
  r.get(&count);
  out->shutdown = shutdown != 0;
  out->requests.clear();
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    Request q;
    if (!get_request(r, &q) && r.ok()) return Status::unknown_error("malformed request list (bad enum value)");
    out->requests.push_back(std::move(q));
  }
  const auto max_words = static_cast<uint32_t>(std::min<size_t>((max_slots + 63) / 64, UINT32_MAX));
  if (r.ok() && !out->cached.read(r, max_words) && r.ok()) {
    return Status::unknown_error("malformed request list (bad cache bits)");
  }
  r.get(&out->cache_epoch);
  if (!r.ok() || !r.at_end()) return Status::unknown_error("malformed request list (truncated)");
  return Status::ok();
}

std::string ResponseList::serialize() const {
  WireWriter w;
  w.put(kResponseMagic);
  w.put<uint8_t>(shutdown ? 1 : 0);
  w.put_string(shutdown_reason);
  w.put(cache_epoch);
  w.put<uint32_t>(static_cast<uint32_t>(responses.size()));
  for (const Response& r : responses) {
    w.put(static_cast<int32_t>(r.type));
    w.put<uint32_t>(static_cast<uint32_t>(r.names.size()));
    for (const auto& n : r.names) w.put_string(n);
    w.put<uint32_t>(static_cast<uint32_t>(r.slots.size()));
    for (int32_t slot : r.slots) w.put(slot);
    w.put_string(r.error_message);
    w.put(r.total_bytes);
    w.put_int64s(r.first_dims);
    w.put_int64s(r.splits);
    w.put<uint32_t>(static_cast<uint32_t>(r.joined_specs.size()));
    for (const Request& q : r.joined_specs) put_request(w, q);
    w.put(r.last_joined_rank);
  }
  w.put<uint32_t>(static_cast<uint32_t>(resend.size()));
  for (const Resend& x : resend) {
    w.put(x.rank);
    w.put(x.slot);
    w.put(x.epoch);
  }
  return w.take();
}

Status ResponseList::parse(const std::string& bytes, ResponseList* out) {
  WireReader r(bytes);
  uint32_t magic = 0, count = 0;
  uint8_t shutdown = 0;
  if (!r.get(&magic) || magic != kResponseMagic) return Status::unknown_error("malformed response list (bad header)");
  r.get(&shutdown);
  r.get_string(&out->shutdown_reason);
  r.get(&out->cache_epoch);
  r.get(&count);
  out->shutdown = shutdown != 0;
  out->responses.clear();
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    Response p;
    int32_t type = 0;
    uint32_t names = 0;
    r.get(&type);
    r.get(&names);
    for (uint32_t k = 0; k < names && r.ok(); ++k) {
      std::string n;
      r.get_string(&n);
      p.names.push_back(std::move(n));
    }
    uint32_t slots = 0;
    r.get(&slots);
    for (uint32_t k = 0; k < slots && r.ok(); ++k) {
      int32_t slot = -1;
      r.get(&slot);
      p.slots.push_back(slot);
    }
    r.get_string(&p.error_message);
    r.get(&p.total_bytes);
    r.get_int64s(&p.first_dims);
    r.get_int64s(&p.splits);
    uint32_t specs = 0;
    r.get(&specs);
    for (uint32_t k = 0; k < specs && r.ok(); ++k) {
      Request q;
      if (!get_request(r, &q) && r.ok()) return Status::unknown_error("malformed response list (bad spec)");
      p.joined_specs.push_back(std::move(q));
    }
    r.get(&p.last_joined_rank);
    if (type < 0 || type > kLastResponseType) return Status::unknown_error("malformed response list (bad type)");
    p.type = static_cast<ResponseType>(type);
    out->responses.push_back(std::move(p));
  }
  uint32_t resends = 0;
  r.get(&resends);
  out->resend.clear();
  for (uint32_t i = 0; i < resends && r.ok(); ++i) {
    Resend x;
    r.get(&x.rank);
    r.get(&x.slot);
    r.get(&x.epoch);
    out->resend.push_back(x);
  }
  if (!r.ok() || !r.at_end()) return Status::unknown_error("malformed response list (truncated)");
  return Status::ok();
}

}  // namespace chorus::detail
