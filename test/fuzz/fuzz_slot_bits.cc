// Fuzz target: SlotBits::read, the cache-bit vector inside a request list.
// The first two bytes choose the receiver's capacity (so every capacity,
// word-aligned or not, is tried); the rest is the vector. What it accepts
// lies inside the capacity, ascending, and re-encodes unchanged.
#include <cstdint>

#include "fuzz_check.h"
#include "negotiation/slot_bits.h"

using namespace chorus::detail;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  if (size < 2) return 0;
  const size_t capacity = data[0] | (size_t{data[1]} << 8);
  const std::string bytes = fuzz_bytes(data + 2, size - 2);
  WireReader in(bytes);
  SlotBits bits;
  if (!bits.read(in, capacity)) return 0;
  int32_t previous = -1;
  size_t n = 0;
  bits.for_each([&](int32_t slot) {
    FUZZ_CHECK(slot > previous && static_cast<size_t>(slot) < capacity);
    FUZZ_CHECK(bits.contains(slot));
    previous = slot;
    ++n;
  });
  FUZZ_CHECK(n == bits.count());
  WireWriter out;
  bits.write(out);
  const std::string once = out.take();
  WireReader again_in(once);
  SlotBits again;
  FUZZ_CHECK(again.read(again_in, capacity) && again == bits && again_in.at_end());
  return 0;
}
