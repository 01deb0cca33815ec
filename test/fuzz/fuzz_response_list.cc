// Fuzz target: ResponseList::parse, every worker's decoder of what the
// coordinator sends. Whatever it accepts must be safe to compute with and
// must survive a re-encode unchanged.
#include <cstdint>

#include "fuzz_check.h"
#include "negotiation/messages.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
constexpr size_t kCapacity = 100;
}

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  ResponseList list;
  if (!ResponseList::parse(fuzz_bytes(data, size), &list, kCapacity).is_ok()) return 0;
  for (const Response& p : list.responses) {
    FUZZ_CHECK(p.total_bytes >= 0);
    for (int32_t slot : p.slots) FUZZ_CHECK(slot >= 0 && static_cast<size_t>(slot) < kCapacity);
    for (int64_t d : p.first_dims) FUZZ_CHECK(d >= 0);
    for (const Request& q : p.joined_specs) FUZZ_CHECK(q.num_elements() >= 0);
  }
  for (const Resend& x : list.resend) FUZZ_CHECK(x.rank >= 0 && x.slot >= 0 && static_cast<size_t>(x.slot) < kCapacity);
  const std::string once = list.serialize();
  ResponseList again;
  FUZZ_CHECK(ResponseList::parse(once, &again, kCapacity).is_ok());
  FUZZ_CHECK(again.serialize() == once);
  return 0;
}
