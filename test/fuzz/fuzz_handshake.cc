// Fuzz target: decode_hello (net/tcp_handshake.h), the first bytes a
// stranger's connection sends to any listener of a TCP job, before it has
// proven anything. Whatever it accepts is exactly what encode_hello writes
// for the claim it read (nothing before, nothing after); what it says needs
// more is a prefix of such a hello; and no purpose outside the three.
#include <cstdint>

#include "net/tcp_handshake.h"
#include "fuzz_check.h"

using namespace chorus::detail;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  const std::string bytes = fuzz_bytes(data, size);
  Nonce nc{};
  HandshakeClaim claim;
  const Decoded d = decode_hello(bytes, &nc, &claim);
  if (d != Decoded::kOk) return 0;
  FUZZ_CHECK(claim.purpose == HandshakePurpose::kRendezvous || claim.purpose == HandshakePurpose::kMesh ||
             claim.purpose == HandshakePurpose::kElastic);
  FUZZ_CHECK(encode_hello(nc, claim) == bytes);
  for (size_t cut : {size_t{0}, bytes.size() / 2, bytes.size() - 1}) {
    Nonce n2{};
    HandshakeClaim c2;
    FUZZ_CHECK(decode_hello(bytes.substr(0, cut), &n2, &c2) == Decoded::kNeedMore);
  }
  Nonce n3{};
  HandshakeClaim c3;
  FUZZ_CHECK(decode_hello(bytes + "x", &n3, &c3) == Decoded::kBad);
  return 0;
}
