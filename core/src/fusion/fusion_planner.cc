#include "fusion/fusion_planner.h"

#include "negotiation/collective_traits.h"
#include "negotiation/request_fields.h"

#include <algorithm>
#include <climits>
#include <tuple>

namespace chorus::detail {

namespace {

// Error responses never fuse; others as their collective's row says.
bool fusable(ResponseType type) {
  const int32_t t = static_cast<int32_t>(type);
  return t <= kLastCollectiveType && traits_of(static_cast<CollectiveType>(t)).fusable;
}

// The rows of Request marked fused_alike (negotiation/request_fields.h):
// the collective, dtype and device kind, and the op and scale factors where the
// collective reduces (allgather only moves bytes).
bool fusable_together(const Request& a, const Request& b) {
  if (a.type != b.type) return false;
  bool alike = true;
  for_each_request_field([&](const auto& f) {
    if (!alike || !f.fused_alike) return;
    if (f.mismatch.compared == nullptr || f.mismatch.compared(a.type)) alike = a.*f.member == b.*f.member;
  });
  return alike;
}

// A fused allgather moves its packed bytes in one allgatherv whose counts
// are MPI ints, so its bucket stops short of 2^31 bytes.
int64_t bucket_limit(ResponseType type, int64_t threshold_bytes) {
  return type == ResponseType::kAllgather ? std::min<int64_t>(threshold_bytes, INT_MAX) : threshold_bytes;
}

// What placing a tensor needs to know about it.
struct Item {
  const Request* spec;
  ResponseType type;
  int64_t bytes;
};

// The response each item goes into, as an index into the plan; an item
// whose index equals the number of responses before it starts a new one.
std::vector<size_t> place(const std::vector<Item>& items, int64_t threshold_bytes) {
  struct Bucket {
    size_t response;
    const Request* key;  // the first tensor's
    ResponseType type;
    int64_t bytes;
  };
  std::vector<size_t> out;
  out.reserve(items.size());
  std::vector<Bucket> open;
  size_t responses = 0;
  for (const Item& it : items) {
    Bucket* target = nullptr;
    if (fusable(it.type)) {
      for (Bucket& b : open) {
        if (b.type == it.type && fusable_together(*b.key, *it.spec) &&
            b.bytes + it.bytes <= bucket_limit(b.type, threshold_bytes)) {
          target = &b;
          break;
        }
      }
    }
    if (target != nullptr) {
      target->bytes += it.bytes;
      out.push_back(target->response);
      continue;
    }
    if (fusable(it.type)) open.push_back({responses, it.spec, it.type, it.bytes});
    out.push_back(responses++);
  }
  return out;
}

// Appends `add` (one tensor) to the fused response `into`.
void merge(Response& into, const Response& add) {
  into.names.push_back(add.names.front());
  into.total_bytes += add.total_bytes;
  into.first_dims.insert(into.first_dims.end(), add.first_dims.begin(), add.first_dims.end());
  into.joined_specs.insert(into.joined_specs.end(), add.joined_specs.begin(), add.joined_specs.end());
}

}  // namespace

std::vector<Response> plan_fusion(std::vector<ReadyTensor> ready, int64_t threshold_bytes) {
  std::vector<Item> items;
  items.reserve(ready.size());
  for (const ReadyTensor& t : ready) items.push_back({&t.request, t.response.type, t.response.total_bytes});
  const std::vector<size_t> at = place(items, threshold_bytes);
  std::vector<Response> plan;
  for (size_t i = 0; i < ready.size(); ++i) {
    if (at[i] == plan.size()) {
      plan.push_back(std::move(ready[i].response));
    } else {
      merge(plan[at[i]], ready[i].response);
    }
  }
  return plan;
}

std::vector<Response> plan_fusion(const std::vector<int32_t>& slots, const ResponseCache& cache,
                                  int64_t threshold_bytes) {
  std::vector<Item> items;
  items.reserve(slots.size());
  for (int32_t slot : slots) {
    // Ready slots cannot change before they are planned: the cache changes
    // only when a list runs, and a list takes every ready slot with it.
    const Request& spec = *cache.at(slot);
    items.push_back({&spec, response_type_of(spec.type), spec.num_elements() * dtype_size(spec.dtype)});
  }
  const std::vector<size_t> at = place(items, threshold_bytes);
  std::vector<Response> plan;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (at[i] == plan.size()) {
      plan.emplace_back();
      plan.back().type = items[i].type;
      plan.back().device_kind = items[i].spec->device_kind;
    }
    Response& r = plan[at[i]];
    r.slots.push_back(slots[i]);
    r.total_bytes += items[i].bytes;
  }
  return plan;
}

}  // namespace chorus::detail
