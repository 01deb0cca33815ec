#include "sha256.h"

#include <openssl/sha.h>

namespace chorus_examples {

// libcrypto's SHA-256 (one-shot; it never fails for in-memory input).
Sha256Digest sha256(const void* data, size_t size) {
  Sha256Digest digest{};
  SHA256(static_cast<const unsigned char*>(data), size, digest.data());
  return digest;
}

std::string to_hex(const Sha256Digest& digest) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) out += {kHex[b >> 4], kHex[b & 15]};
  return out;
}

}  // namespace chorus_examples
