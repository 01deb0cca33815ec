#pragma once
// How every collective that splits a buffer among ranks splits it: the
// ring's chunks, the shared-memory algorithms' owned parts, reducescatter's
// rows (CPU and NCCL alike), so every path agrees on who holds what.

#include <cstdint>

namespace chorus::detail {

/// Element range of chunk `chunk` of `count` elements cut into `parts`:
/// sizes differ by at most one, the larger ones first.
struct ChunkRange {
  int64_t offset = 0;
  int64_t length = 0;
};

inline ChunkRange even_chunk(int64_t count, int parts, int chunk) {
  const int64_t base = count / parts, extra = count % parts;
  ChunkRange r;
  r.offset = chunk * base + (chunk < extra ? chunk : extra);
  r.length = base + (chunk < extra ? 1 : 0);
  return r;
}

}  // namespace chorus::detail
