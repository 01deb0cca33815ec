#pragma once
// Copies whose stores bypass the caches (non-temporal), for results too
// large to stay cached anyway: no read-for-ownership of the destination
// lines, so a copy moves two thirds of the memory traffic of memcpy's.
// Streaming stores are weakly ordered: call streaming_stores_done() before
// another thread or process may read what was copied.

#include <cstddef>

namespace chorus::detail {

void copy_streaming(void* dst, const void* src, size_t bytes);
/// Orders every streaming store made so far before the stores that follow.
void streaming_stores_done();

}  // namespace chorus::detail
