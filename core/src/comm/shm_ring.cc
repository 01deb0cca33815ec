#include "comm/shm_ring.h"

#include <algorithm>
#include <cstring>

namespace chorus::detail {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "ring cursors must work across processes");

namespace {
constexpr size_t kRecordHeaderBytes = 8;
constexpr uint64_t kLastRecord = uint64_t{1} << 63;  // in the header: the message ends with this record

uint64_t padded(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }
}  // namespace

ShmRing::ShmRing(void* at, size_t capacity)
    : written_(static_cast<std::atomic<uint64_t>*>(at)),
      read_(reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(at) + kCursorBytes / 2)),
      data_(static_cast<char*>(at) + kCursorBytes),
      capacity_(capacity) {}

void ShmRing::copy_in(uint64_t at, const void* data, size_t bytes) {
  const size_t from = static_cast<size_t>(at % capacity_);
  const size_t first = std::min(bytes, capacity_ - from);
  std::memcpy(data_ + from, data, first);
  std::memcpy(data_, static_cast<const char*>(data) + first, bytes - first);
}

void ShmRing::copy_out(uint64_t at, void* data, size_t bytes) const {
  const size_t from = static_cast<size_t>(at % capacity_);
  const size_t first = std::min(bytes, capacity_ - from);
  std::memcpy(data, data_ + from, first);
  std::memcpy(static_cast<char*>(data) + first, data_, bytes - first);
}

bool ShmRing::write(const std::string& message, size_t* offset) {
  const uint64_t free = capacity_ - (mine_ - read_->load(std::memory_order_acquire));
  const size_t left = message.size() - *offset;
  // A header and at least 8 bytes of payload (or the whole rest): no record
  // of a few bytes at a time while the reader is behind.
  if (free < kRecordHeaderBytes + std::min<size_t>(left, 8)) return false;
  const size_t piece = std::min<size_t>(left, (free - kRecordHeaderBytes) & ~uint64_t{7});
  const bool last = piece == left;
  const uint64_t header = piece | (last ? kLastRecord : 0);
  copy_in(mine_ + kRecordHeaderBytes, message.data() + *offset, piece);
  copy_in(mine_, &header, sizeof header);
  mine_ += kRecordHeaderBytes + padded(piece);
  written_->store(mine_, std::memory_order_release);  // the record is whole before the reader sees it
  *offset += piece;
  return last;
}

bool ShmRing::read(std::string* message) {
  const uint64_t written = written_->load(std::memory_order_acquire);
  while (mine_ != written) {
    uint64_t header = 0;
    copy_out(mine_, &header, sizeof header);
    const size_t piece = static_cast<size_t>(header & ~kLastRecord);
    const size_t had = partial_.size();
    partial_.resize(had + piece);
    copy_out(mine_ + kRecordHeaderBytes, &partial_[had], piece);
    mine_ += kRecordHeaderBytes + padded(piece);
    read_->store(mine_, std::memory_order_release);  // copied out: the writer may reuse the space
    if (header & kLastRecord) {
      *message = std::move(partial_);
      partial_ = std::string();
      return true;
    }
  }
  return false;
}

}  // namespace chorus::detail
