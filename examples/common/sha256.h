#pragma once
/// \file sha256.h
/// SHA-256 (FIPS 180-4) of a byte string: the digest written with every
/// checkpoint, so a file changed on disk is refused instead of loaded
/// (LibTorch's reader does not check the archive's CRCs). OpenSSL's
/// libcrypto computes it, as it does the TCP transport's handshake.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace chorus_examples {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(const void* data, size_t size);

/// Lower-case hex, for messages.
std::string to_hex(const Sha256Digest& digest);

}  // namespace chorus_examples
