#include "negotiation/collective_traits.h"

namespace chorus::detail {

namespace {

// Indexed by CollectiveType. Barriers, joins and registrations are one-off
// synchronizations: caching them would only evict real tensors.
constexpr CollectiveTraits kTraits[] = {
    //                                                    cache  bits   fuse   vary   joined reduces
    {"allreduce", ResponseType::kAllreduce, /*         */ true, true, true, false, true, true},
    {"broadcast", ResponseType::kBroadcast, /*         */ true, true, false, false, false, false},
    {"allgather", ResponseType::kAllgather, /*         */ false, false, true, true, false, false},
    {"barrier", ResponseType::kBarrier, /*             */ false, false, false, false, false, false},
    {"reducescatter", ResponseType::kReducescatter, /* */ true, true, false, false, false, true},
    {"alltoall", ResponseType::kAlltoall, /*           */ false, false, false, true, false, false},
    {"join", ResponseType::kJoin, /*                   */ false, false, false, false, false, false},
    {"process set registration", ResponseType::kAddProcessSet, false, false, false, false, false, false},
};
static_assert(sizeof(kTraits) / sizeof(kTraits[0]) == kLastCollectiveType + 1, "one row per collective");

constexpr bool rows_in_order() {
  for (int32_t t = 0; t <= kLastCollectiveType; ++t) {
    if (static_cast<int32_t>(kTraits[t].response) != t) return false;  // the enums share their numbers
  }
  return true;
}
static_assert(rows_in_order(), "row t runs response t");

}  // namespace

const CollectiveTraits& traits_of(CollectiveType type) { return kTraits[static_cast<int32_t>(type)]; }

}  // namespace chorus::detail
