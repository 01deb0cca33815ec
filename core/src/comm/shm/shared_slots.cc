#include "comm/shm/shared_slots.h"

namespace chorus::detail {

HeapStaging::HeapStaging(int size, int64_t block_bytes, int64_t arena_bytes)
    : size_(size), block_bytes_(block_bytes), arena_bytes_(arena_bytes),
      memory_(static_cast<size_t>(size * 2 * block_bytes)),
      exchange_(static_cast<size_t>(size * 2 * kExchangeAreaBytes)), arrivals_(static_cast<size_t>(size)) {
  for (int k = 0; arena_bytes > 0 && k < size; ++k) {
    std::shared_ptr<char> memory(new char[static_cast<size_t>(arena_bytes)], std::default_delete<char[]>());
    arenas_.push_back(std::make_shared<SharedArena>(memory.get(), arena_bytes, memory, -1, 0));
  }
}

SharedSlots HeapStaging::slots(int rank) {
  SharedSlots s;
  s.rank = rank;
  s.size = size_;
  s.block_bytes = block_bytes_;
  for (int k = 0; k < size_; ++k) {
    s.staging.push_back(memory_.data() + k * 2 * block_bytes_);
    s.arrivals.push_back(&arrivals_[static_cast<size_t>(k)]);
    s.exchange.push_back(exchange_.data() + k * 2 * kExchangeAreaBytes);
    if (!arenas_.empty()) s.arenas.push_back(arenas_[static_cast<size_t>(k)]->base());
  }
  s.arena_bytes = arenas_.empty() ? 0 : arenas_[static_cast<size_t>(rank)]->bytes();  // as trimmed to 64-byte units
  return s;
}

}  // namespace chorus::detail
