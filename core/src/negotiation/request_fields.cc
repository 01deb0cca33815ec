// The checks and mismatch texts of Request's rows (request_fields.h).
#include "negotiation/request_fields.h"

#include <algorithm>
#include <sstream>

#include "negotiation/collective_traits.h"

namespace chorus::detail::request_field {

namespace {

// Says what is wrong ("rank -2").
Status bad(const char* what, int64_t value) { return wrong_value(std::string(what) + " " + std::to_string(value)); }

std::string list_text(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
  return out.str();
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

Status check_counts(const char* what, const std::vector<int64_t>& values, bool summed) {
  int64_t sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0) {
      return wrong_value(std::string(what) + " " + std::to_string(i) + " is " + std::to_string(values[i]));
    }
    if (summed && __builtin_add_overflow(sum, values[i], &sum)) {
      return wrong_value(std::string(what) + "s overflow 64 bits");
    }
  }
  return Status::ok();
}

Status check_rank(const Request& r) { return r.rank >= 0 ? Status::ok() : bad("rank", r.rank); }

Status check_type(const Request& r) {
  const auto t = static_cast<int32_t>(r.type);
  return (t >= 0 && t <= kLastCollectiveType) ? Status::ok() : bad("collective type", t);
}

Status check_dtype(const Request& r) {
  return is_valid_dtype(static_cast<int>(r.dtype)) ? Status::ok() : bad("dtype", static_cast<int>(r.dtype));
}

Status check_shape(const Request& r) {
  for (size_t i = 0; i < r.shape.size(); ++i) {
    if (r.shape[i] < 0) return check_counts("dimension", r.shape, false);
  }
  if (std::find(r.shape.begin(), r.shape.end(), 0) != r.shape.end()) return Status::ok();
  int64_t bytes = dtype_size(r.dtype);  // no empty dimension: the bytes must fit
  for (int64_t d : r.shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      return wrong_value("shape " + list_text(r.shape) + ": bytes overflow 64 bits");
    }
  }
  return Status::ok();
}

Status check_op(const Request& r) {
  return is_valid_reduce_op(static_cast<int>(r.op)) ? Status::ok() : bad("reduce op", static_cast<int>(r.op));
}

Status check_root(const Request& r) { return r.root_rank >= -1 ? Status::ok() : bad("root rank", r.root_rank); }
Status check_device(const Request& r) { return r.device >= kCpuDevice ? Status::ok() : bad("device", r.device); }

// The index must say the same as the kind: a CUDA request names its GPU.
Status check_device_kind(const Request& r) {
  const int32_t kind = static_cast<int32_t>(r.device_kind);
  if (kind < 0 || kind > kLastDeviceKind) return bad("device kind", kind);
  return r.device_kind == device_kind_of(r.device) ? Status::ok() : bad("device kind for device", r.device);
}

Status check_group_size(const Request& r) {
  return r.group_size >= 0 ? Status::ok() : bad("group size", r.group_size);
}

Status check_splits(const Request& r) {
  int64_t sum = 0;
  for (int64_t s : r.splits) {
    if (s < 0 || __builtin_add_overflow(sum, s, &sum)) return check_counts("split", r.splits, true);
  }
  return Status::ok();
}

Status check_members(const Request& r) {
  for (int64_t m : r.process_set_ranks) {
    if (m < 0 || m > INT32_MAX) return bad("process set rank", m);
  }
  return Status::ok();
}

std::string show_type(const Request& r, const MismatchContext&) { return collective_name(r.type); }
std::string show_dtype(const Request& r, const MismatchContext&) { return dtype_name(r.dtype); }

// What must agree of a shape: all of it, or "[*, rest]".
std::string show_shape(const Request& r, const MismatchContext&) {
  if (!traits_of(r.type).first_dim_varies || r.shape.empty()) return list_text(r.shape);
  const std::vector<int64_t> rest(r.shape.begin() + 1, r.shape.end());
  return "[*" + std::string(rest.empty() ? "" : ", ") + list_text(rest).substr(1);
}

std::string show_op(const Request& r, const MismatchContext&) { return reduce_op_name(r.op); }
std::string show_prescale(const Request& r, const MismatchContext&) { return number_text(r.prescale); }
std::string show_postscale(const Request& r, const MismatchContext&) { return number_text(r.postscale); }

// The root as the user named it: a global rank, or what was wrong with it.
std::string show_root(const Request& r, const MismatchContext& c) {
  if (r.root_rank >= 0) return std::to_string(c.scope.world_rank(r.root_rank));
  return std::to_string(r.named_root) +
         (c.scope.id == 0 ? " (outside 0.." + std::to_string(c.world_size - 1) + ")" : " (not a member)");
}

std::string show_device_kind(const Request& r, const MismatchContext&) { return device_kind_name(r.device_kind); }

std::string show_group(const Request& r, const MismatchContext&) {
  return r.group.empty() ? std::string("none") : r.group + " of " + std::to_string(r.group_size);
}

std::string show_members(const Request& r, const MismatchContext&) { return list_text(r.process_set_ranks); }

bool reduces(CollectiveType type) { return traits_of(type).reduces; }
bool is_broadcast(CollectiveType type) { return type == CollectiveType::kBroadcast; }
bool is_registration(CollectiveType type) { return type == CollectiveType::kAddProcessSet; }

}  // namespace chorus::detail::request_field
