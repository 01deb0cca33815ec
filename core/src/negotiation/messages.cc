#include "negotiation/messages.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/wire.h"
#include "negotiation/collective_traits.h"
#include "negotiation/request_fields.h"

namespace chorus::detail {

namespace {
// Guards against parsing bytes of another protocol version.
constexpr uint32_t kRequestMagic = 0x43525134;   // "CRQ4": a refusal after the device kind
constexpr uint32_t kResponseMagic = 0x43525333;  // "CRS3": the device kind
}  // namespace

const char* collective_name(CollectiveType type) {
  const int32_t t = static_cast<int32_t>(type);
  return t >= 0 && t <= kLastCollectiveType ? traits_of(type).name : "unknown";
}

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "CPU";
    case DeviceKind::kCuda: return "CUDA";
  }
  return "unknown";
}

ResponseType response_type_of(CollectiveType type) { return traits_of(type).response; }

int64_t Request::num_elements() const {
  // An empty dimension first: a decoded shape may pair 0 with dimensions
  // whose product alone would overflow.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool Request::operator==(const Request& o) const {
  bool same = true;
  for_each_request_field([&](const auto& f) { same = same && this->*f.member == o.*f.member; });
  return same;
}

bool same_signature(const Request& a, const Request& b) {
  bool same = true;
  for_each_request_field([&](const auto& f) {
    if (!same || f.agreement == Agreement::kOwn) return;
    if constexpr (std::is_same_v<typename std::decay_t<decltype(f)>::Type, std::vector<int64_t>>) {
      if (f.agreement == Agreement::kSameAfterFirst) {
        same = same_after_first(a.*f.member, b.*f.member, traits_of(a.type).first_dim_varies);
        return;
      }
    }
    same = a.*f.member == b.*f.member;
  });
  return same;
}

namespace {

using request_field::wrong_value;

__attribute__((flatten)) void put_request(WireWriter& w, const Request& r) {
  for_each_request_field([&](const auto& f) {
    const auto& value = r.*f.member;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::string>) w.put_string(value);
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) w.put_int64s(value);
    else w.put(value);  // numbers, and enums as their 32-bit values
  });
}

// Reads one request; returns OK or what is wrong with it (a truncated
// reader is the caller's to report). Every row's check runs before anything
// computes with the values: a corrupt message must not make an element
// count overflow (undefined behaviour) or index past a table.
__attribute__((flatten)) Status get_request(WireReader& r, Request* q) {
  for_each_request_field([&](const auto& f) {
    auto& value = q->*f.member;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::string>) r.get_string(&value);
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) r.get_int64s(&value);
    else r.get(&value);
  });
  Status bad;
  bool good = r.ok();  // a truncated reader: the caller reports it
  for_each_request_field([&](const auto& f) {
    if (good && f.check != nullptr) {
      bad = f.check(*q);
      good = bad.is_ok();
    }
  });
  return bad;
}

Status malformed(const char* list, const std::string& what) {
  return Status::unknown_error(std::string("malformed ") + list + " (" + what + ")");
}

std::string tensor_at(const char* kind, uint32_t i, const std::string& name) {
  return std::string(kind) + " " + std::to_string(i) + " '" + name + "': bad ";
}

}  // namespace

std::string RequestList::serialize() const {
  WireWriter w;
  w.put(kRequestMagic);
  w.put<uint8_t>(shutdown ? 1 : 0);
  w.put_string(shutdown_reason);
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
  if (!r.get(&magic) || magic != kRequestMagic) return malformed("request list", "bad header");
  r.get(&shutdown);
  r.get_string(&out->shutdown_reason);
  r.get(&count);
  out->shutdown = shutdown != 0;
  out->requests.clear();
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    Request q;
    const Status bad = get_request(r, &q);
    if (!bad.is_ok()) return malformed("request list", tensor_at("request", i, q.name) + bad.message());
    out->requests.push_back(std::move(q));
  }
  if (r.ok() && !out->cached.read(r, max_slots) && r.ok()) {
    return malformed("request list", "bad cache bits: unordered, empty or at slots past the cache's " +
                                         std::to_string(max_slots));
  }
  r.get(&out->cache_epoch);
  if (!r.ok() || !r.at_end()) return malformed("request list", "truncated");
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
    w.put(static_cast<int32_t>(r.device_kind));
  }
  w.put<uint32_t>(static_cast<uint32_t>(resend.size()));
  for (const Resend& x : resend) {
    w.put(x.rank);
    w.put(x.slot);
    w.put(x.epoch);
  }
  w.put<uint8_t>(tuned ? 1 : 0);
  if (tuned) {
    w.put(tuned->trial);
    w.put(tuned->fusion_threshold_bytes);
    w.put(tuned->fusion_wait_us);
    w.put(tuned->cycle_time_ms);
  }
  return w.take();
}

namespace {

// Reads one response; returns OK or what is wrong with it.
Status get_response(WireReader& r, size_t max_slots, Response* p) {
  int32_t type = 0;
  uint32_t names = 0, slots = 0, specs = 0;
  int32_t kind = 0;
  r.get(&type);
  r.get(&names);
  for (uint32_t k = 0; k < names && r.ok(); ++k) r.get_string(&p->names.emplace_back());
  r.get(&slots);
  for (uint32_t k = 0; k < slots && r.ok(); ++k) {
    int32_t slot = -1;
    r.get(&slot);
    if (r.ok() && (slot < 0 || static_cast<size_t>(slot) >= max_slots)) {
      return wrong_value("cache slot " + std::to_string(slot));
    }
    p->slots.push_back(slot);
  }
  r.get_string(&p->error_message);
  r.get(&p->total_bytes);
  r.get_int64s(&p->first_dims);
  r.get_int64s(&p->splits);
  r.get(&specs);
  for (uint32_t k = 0; k < specs && r.ok(); ++k) {
    Request& q = p->joined_specs.emplace_back();
    const Status bad = get_request(r, &q);
    if (!bad.is_ok()) return wrong_value("joined spec " + std::to_string(k) + ": " + bad.message());
  }
  r.get(&p->last_joined_rank);
  r.get(&kind);
  if (!r.ok()) return Status::ok();  // truncated: the caller reports it
  if (type < 0 || type > kLastResponseType) return wrong_value("type " + std::to_string(type));
  p->type = static_cast<ResponseType>(type);
  if (kind < 0 || kind > kLastDeviceKind) return wrong_value("device kind " + std::to_string(kind));
  p->device_kind = static_cast<DeviceKind>(kind);
  if (p->total_bytes < 0) return wrong_value("total bytes " + std::to_string(p->total_bytes));
  Status bad = request_field::check_counts("first dimension", p->first_dims, false);
  if (bad.is_ok()) bad = request_field::check_counts("split", p->splits, true);
  if (bad.is_ok() && p->last_joined_rank < -1) {
    bad = wrong_value("last joined rank " + std::to_string(p->last_joined_rank));
  }
  return bad;
}

}  // namespace

Status ResponseList::parse(const std::string& bytes, ResponseList* out, size_t max_slots) {
  WireReader r(bytes);
  uint32_t magic = 0, count = 0, resends = 0;
  uint8_t shutdown = 0;
  if (!r.get(&magic) || magic != kResponseMagic) return malformed("response list", "bad header");
  r.get(&shutdown);
  r.get_string(&out->shutdown_reason);
  r.get(&out->cache_epoch);
  r.get(&count);
  out->shutdown = shutdown != 0;
  out->responses.clear();
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    Response p;
    const Status bad = get_response(r, max_slots, &p);
    if (!bad.is_ok()) {
      const std::string first_name = p.names.empty() ? "" : p.names[0];
      return malformed("response list", tensor_at("response", i, first_name) + bad.message());
    }
    out->responses.push_back(std::move(p));
  }
  r.get(&resends);
  out->resend.clear();
  for (uint32_t i = 0; i < resends && r.ok(); ++i) {
    Resend x;
    r.get(&x.rank);
    r.get(&x.slot);
    r.get(&x.epoch);
    if (r.ok() && (x.rank < 0 || x.slot < 0 || static_cast<size_t>(x.slot) >= max_slots)) {
      return malformed("response list", "resend " + std::to_string(i) + ": bad rank " + std::to_string(x.rank) +
                                            " or cache slot " + std::to_string(x.slot));
    }
    out->resend.push_back(x);
  }
  uint8_t has_tuned = 0;
  r.get(&has_tuned);
  out->tuned.reset();
  if (r.ok() && has_tuned != 0) {
    TunedSettings t;
    r.get(&t.trial);
    r.get(&t.fusion_threshold_bytes);
    r.get(&t.fusion_wait_us);
    r.get(&t.cycle_time_ms);
    // The knobs' own ranges (common/knob_registry.cc): a corrupt value never reaches a clock.
    const bool sane = t.trial >= -1 && t.fusion_threshold_bytes >= 0 && t.fusion_wait_us >= 0 &&
                      t.fusion_wait_us <= 1e7 && t.cycle_time_ms >= 0 && t.cycle_time_ms <= 1e4;
    if (r.ok() && !sane) return malformed("response list", "tuned settings out of range");
    out->tuned = t;
  }
  if (!r.ok() || !r.at_end()) return malformed("response list", "truncated");
  return Status::ok();
}

}  // namespace chorus::detail
