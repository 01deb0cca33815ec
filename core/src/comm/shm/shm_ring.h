#pragma once
// One direction between two processes of one host: a single-producer,
// single-consumer ring of messages in shared memory, each one record
// (8-byte header, payload padded to 8 bytes) written only when it fits
// whole. A message that does not fit goes another way (the sockets:
// comm/shm/shm_control_channel.h), and the ring keeps the order: the writer
// counts such messages here, and puts nothing more in the ring until the
// reader took all of them, so whatever is in the ring came before every
// message still on the other way. The cursors only grow (the position is
// the cursor modulo the capacity), so records wrap without padding. Neither
// side makes a system call: each looks at the other's counters.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace chorus::detail {

class ShmRing {
 public:
  /// The counters: the writer's and the reader's, each on its own cache line.
  static constexpr size_t kCounterBytes = 128;
  /// Bytes of shared memory a ring of `capacity` payload bytes takes.
  static size_t bytes_for(size_t capacity) { return kCounterBytes + capacity; }

  /// A ring over `at` (zeroed: an empty ring), of `capacity` bytes, a
  /// multiple of 8. Each process holds its own ShmRing over the same
  /// memory, and uses it only to write or only to read.
  ShmRing(void* at, size_t capacity);

  /// Writer: whether `bytes` may go in the ring now (it fits, and every
  /// message sent the other way was taken). Only the reader changes the answer, to yes.
  bool takes(size_t bytes) const;
  /// Writer: writes `message` if takes(); false (nothing written) if not.
  bool write(const std::string& message);
  /// Writer: one more message went the other way.
  void sent_elsewhere();

  enum class Next { kNothing, kMessage, kElsewhere };
  /// Reader: kMessage with the next message in `*message`; kElsewhere when
  /// the next one went the other way (take it there, then took_elsewhere());
  /// kNothing when none is due.
  Next read(std::string* message);
  /// Reader: the message due the other way was taken.
  void took_elsewhere();

 private:
  void copy_in(uint64_t at, const void* data, size_t bytes);
  void copy_out(uint64_t at, void* data, size_t bytes) const;

  std::atomic<uint64_t>* written_;         // writer: records up to here are whole
  std::atomic<uint64_t>* sent_elsewhere_;  // writer: messages that went the other way
  std::atomic<uint64_t>* read_;            // reader: space before this is free
  std::atomic<uint64_t>* taken_elsewhere_; // reader: of those, taken
  char* data_;
  size_t capacity_;
  uint64_t cursor_ = 0;     // this side's cursor (the shared copy lags until published)
  uint64_t elsewhere_ = 0;  // this side's count of messages the other way
};

}  // namespace chorus::detail
