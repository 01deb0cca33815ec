// Fuzz target: RequestList::parse, the coordinator's decoder of what every
// worker sends. Whatever it accepts must be safe to compute with (element
// and byte counts defined, cache bits inside the capacity) and must survive
// a re-encode unchanged.
#include <cstdint>

#include "fuzz_check.h"
#include "negotiation/messages.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
constexpr size_t kCapacity = 100;  // not a multiple of 64: the last word is partly outside
}

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  RequestList list;
  if (!RequestList::parse(fuzz_bytes(data, size), &list, kCapacity).is_ok()) return 0;
  for (const Request& r : list.requests) {
    FUZZ_CHECK(r.num_elements() >= 0);
    FUZZ_CHECK(r.num_elements() <= INT64_MAX / dtype_size(r.dtype));
    FUZZ_CHECK(r.rank >= 0);
  }
  list.cached.for_each([](int32_t slot) { FUZZ_CHECK(slot >= 0 && static_cast<size_t>(slot) < kCapacity); });
  const std::string once = list.serialize();
  RequestList again;
  FUZZ_CHECK(RequestList::parse(once, &again, kCapacity).is_ok());
  FUZZ_CHECK(again.serialize() == once);
  return 0;
}
