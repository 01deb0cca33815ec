#include "comm/shm/shm_ring.h"

#include <algorithm>
#include <cstring>

namespace chorus::detail {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "ring counters must work across processes");

namespace {
constexpr size_t kHeaderBytes = 8;

uint64_t padded(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }

std::atomic<uint64_t>* counter(void* at, size_t offset) {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(at) + offset);
}
}  // namespace

ShmRing::ShmRing(void* at, size_t capacity)
    : written_(counter(at, 0)),
      sent_elsewhere_(counter(at, 8)),
      read_(counter(at, kCounterBytes / 2)),
      taken_elsewhere_(counter(at, kCounterBytes / 2 + 8)),
      data_(static_cast<char*>(at) + kCounterBytes),
      capacity_(capacity) {}

void ShmRing::copy_in(uint64_t at, const void* data, size_t bytes) {
  if (bytes == 0) return;
  const size_t from = static_cast<size_t>(at % capacity_);
  const size_t first = std::min(bytes, capacity_ - from);
  std::memcpy(data_ + from, data, first);
  std::memcpy(data_, static_cast<const char*>(data) + first, bytes - first);
}

void ShmRing::copy_out(uint64_t at, void* data, size_t bytes) const {
  if (bytes == 0) return;
  const size_t from = static_cast<size_t>(at % capacity_);
  const size_t first = std::min(bytes, capacity_ - from);
  std::memcpy(data, data_ + from, first);
  std::memcpy(static_cast<char*>(data) + first, data_, bytes - first);
}

bool ShmRing::takes(size_t bytes) const {
  if (taken_elsewhere_->load(std::memory_order_acquire) != elsewhere_) return false;
  const uint64_t free = capacity_ - (cursor_ - read_->load(std::memory_order_acquire));
  return kHeaderBytes + padded(bytes) <= free;
}

bool ShmRing::write(const std::string& message) {
  if (!takes(message.size())) return false;
  const uint64_t header = message.size();
  copy_in(cursor_ + kHeaderBytes, message.data(), message.size());
  copy_in(cursor_, &header, sizeof header);
  cursor_ += kHeaderBytes + padded(message.size());
  written_->store(cursor_, std::memory_order_release);  // the record is whole before the reader sees it
  return true;
}

void ShmRing::sent_elsewhere() { sent_elsewhere_->store(++elsewhere_, std::memory_order_release); }

// The count first, then the ring: a record seen after the count was read
// came before every message the count includes (the writer wrote none
// while such a message was untaken).
ShmRing::Next ShmRing::read(std::string* message) {
  const uint64_t elsewhere = sent_elsewhere_->load(std::memory_order_acquire);
  if (cursor_ == written_->load(std::memory_order_acquire)) return elsewhere != elsewhere_ ? Next::kElsewhere : Next::kNothing;
  uint64_t header = 0;
  copy_out(cursor_, &header, sizeof header);
  message->resize(static_cast<size_t>(header));
  copy_out(cursor_ + kHeaderBytes, &(*message)[0], static_cast<size_t>(header));
  cursor_ += kHeaderBytes + padded(header);
  read_->store(cursor_, std::memory_order_release);  // copied out: the writer may reuse the space
  return Next::kMessage;
}

void ShmRing::took_elsewhere() { taken_elsewhere_->store(++elsewhere_, std::memory_order_release); }

}  // namespace chorus::detail
