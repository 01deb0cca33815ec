#include "idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>

namespace chorus_examples {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

// Reads up to `size` bytes; returns how many came (fewer only at the end of
// the stream). gzread takes an unsigned int, so big reads go in chunks.
size_t read_some(gzFile f, const std::string& path, void* out, size_t size) {
  auto* p = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < size) {
    const size_t chunk = std::min<size_t>(size - done, 1u << 30);
    const int n = gzread(f, p + done, static_cast<unsigned>(chunk));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      fail(path, std::string("read error (truncated or corrupt gzip data?): ") + (msg ? msg : "unknown zlib error"));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

uint32_t big_endian_u32(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

}  // namespace

IdxFile read_idx_file(const std::string& path, int expected_rank) {
  GzHandle f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));

  // Magic: two zero bytes, the element type (0x08 = unsigned byte), the rank.
  unsigned char magic[4];
  if (read_some(f.get(), path, magic, 4) != 4) fail(path, "truncated: shorter than the 4-byte IDX magic number");
  const uint32_t magic_value = big_endian_u32(magic);
  const uint32_t expected_magic = 0x00000800u | static_cast<uint32_t>(expected_rank);
  if (magic_value != expected_magic) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "bad magic number 0x%08x (expected 0x%08x: unsigned bytes, %d dimensions)",
                  magic_value, expected_magic, expected_rank);
    fail(path, buf);
  }

  IdxFile out;
  uint64_t count = 1;
  for (int i = 0; i < expected_rank; ++i) {
    unsigned char b[4];
    if (read_some(f.get(), path, b, 4) != 4) fail(path, "truncated: header ends inside the dimension sizes");
    const uint32_t d = big_endian_u32(b);
    if (d != 0 && count > std::numeric_limits<uint32_t>::max() / d) fail(path, "dimensions too large");
    count *= d;
    out.dims.push_back(d);
  }

  out.data.resize(count);
  const size_t got = read_some(f.get(), path, out.data.data(), count);
  if (got != count) {
    fail(path, "truncated: header announces " + std::to_string(count) + " data bytes, file has " +
                   std::to_string(got));
  }
  unsigned char extra;
  if (read_some(f.get(), path, &extra, 1) != 0) fail(path, "longer than its header announces (trailing bytes)");
  return out;
}

}  // namespace chorus_examples
