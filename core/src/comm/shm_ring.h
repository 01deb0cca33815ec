#pragma once
// One direction between two processes of one host: a single-producer,
// single-consumer ring of messages in shared memory. A message goes as one
// or more records (8-byte header, payload padded to 8 bytes): as much as is
// free at a time, so a message longer than the ring goes in pieces that the
// reader puts together, in order. The cursors only grow (the position is
// the cursor modulo the capacity), so records wrap without padding. Neither
// side makes a system call: the reader looks at the writer's cursor.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace chorus::detail {

class ShmRing {
 public:
  /// The two cursors, each on its own cache line.
  static constexpr size_t kCursorBytes = 128;
  /// Bytes of shared memory a ring of `capacity` payload bytes takes.
  static size_t bytes_for(size_t capacity) { return kCursorBytes + capacity; }

  /// A ring over `at` (zeroed: an empty ring), of `capacity` bytes, a
  /// multiple of 8 and at least 64. Each process holds its own ShmRing over
  /// the same memory, and uses it only to write or only to read.
  ShmRing(void* at, size_t capacity);

  /// Writer: writes `message` from `*offset` on, as much as fits; true
  /// when its end went out (then `*offset` is its size).
  bool write(const std::string& message, size_t* offset);
  /// Reader: true with the next whole message in `*message`, if it came;
  /// the records of a message still arriving are kept until its end.
  bool read(std::string* message);

 private:
  void copy_in(uint64_t at, const void* data, size_t bytes);
  void copy_out(uint64_t at, void* data, size_t bytes) const;

  std::atomic<uint64_t>* written_;  // the writer's cursor: records up to here are whole
  std::atomic<uint64_t>* read_;     // the reader's cursor: space before it is free
  char* data_;
  size_t capacity_;
  uint64_t mine_ = 0;  // this side's cursor (the shared copy lags until published)
  std::string partial_;  // reader: the records of the message under way
};

}  // namespace chorus::detail
