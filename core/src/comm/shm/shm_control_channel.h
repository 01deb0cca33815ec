#pragma once
// The control plane of ranks that all run on one host, through shared
// memory instead of their sockets: a ring (comm/shm/shm_ring.h) from each worker
// to rank 0 and one from rank 0 to each worker, in one segment
// (comm/shm/shared_segment.h). Sends and polls touch only that memory: no
// system call, and no loopback round trip of the kernel's.
//
// The transport's own channel stays beside it. A message that the ring
// does not take now (longer than its free space: longer than the ring, or
// the reader is behind) goes over it, and the ring keeps the order
// (comm/shm/shm_ring.h); the reader drives the sockets only while such a
// message is due. So no send ever waits for the reader, which may be in a
// collective that waits for this rank. The polls also drive the sockets
// every kWatchInterval, so a closed connection or a silent host is noticed
// as before, and failure() is the transport's. close() meets every rank in
// shared memory (each reading what still comes), then closes the
// transport's channel.

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/control_channel.h"
#include "comm/shm/shm_ring.h"

namespace chorus::detail {

class ShmControlChannel final : public ControlChannel {
 public:
  using Clock = std::chrono::steady_clock;
  /// Payload bytes of each ring.
  static constexpr size_t kRingBytes = size_t{64} << 10;
  /// How often the polls drive the transport's channel to hear of lost peers.
  static constexpr std::chrono::microseconds kWatchInterval{1000};

  /// Shared memory for `size` ranks with rings of `ring_bytes` (a multiple of 8).
  static size_t bytes_for(int size, size_t ring_bytes);
  /// Rank `rank` of `size` over `base` (bytes_for(size, ring_bytes), zeroed
  /// before any rank uses it; `mapping` keeps it mapped). `sockets`: the
  /// transport's channel between the same ranks, which must outlive this one.
  ShmControlChannel(int rank, int size, char* base, size_t ring_bytes, std::shared_ptr<void> mapping,
                    ControlChannel& sockets);

  Status send_to_coordinator(std::string bytes) override;
  bool poll_from_workers(int* from_rank, std::string* bytes) override;
  Status send_to_workers(const std::string& bytes) override;
  bool poll_from_coordinator(std::string* bytes) override;
  bool close(std::chrono::milliseconds bound) override;
  std::vector<int> not_at_close() const override;
  Status failure() const override { return sockets_.failure(); }

 private:
  struct Inbox {
    explicit Inbox(ShmRing r) : ring(std::move(r)) {}
    ShmRing ring;
    std::deque<std::string> from_sockets;  // what came over the sockets, in the order sent
  };
  size_t index_of(int peer) const { return rank_ == 0 ? static_cast<size_t>(peer - 1) : 0; }
  int peer_of(size_t index) const { return rank_ == 0 ? static_cast<int>(index) + 1 : 0; }
  std::vector<int> not_marked() const;
  void read_sockets();
  void watch_sockets();
  bool take(int* from_rank, std::string* bytes);
  bool take_from(Inbox& in, std::string* bytes);

  const int rank_;
  const int size_;
  std::shared_ptr<void> mapping_;
  ControlChannel& sockets_;
  std::atomic<int32_t>* at_close_;  // per rank: 1 once it reached close()
  std::vector<ShmRing> out_;        // a worker: to rank 0; rank 0: to worker w at w - 1
  std::vector<Inbox> in_;           // the same peers, the other way
  size_t next_in_ = 0;              // rank 0 takes from the workers in turn
  Clock::time_point last_watch_;
};

/// Collective over `comm`, whose `size` ranks the caller knows to share
/// this host: the shared-memory channel of rank `rank` beside `sockets`.
/// Leaves *out empty, with an OK status, when the segment cannot be set up
/// (the same on every rank); `*why_not` then holds this rank's own error,
/// empty when it was another rank's segment that failed.
Status open_shm_control_channel(Communicator& comm, int rank, int size, ControlChannel& sockets,
                                std::unique_ptr<ControlChannel>* out, std::string* why_not);

}  // namespace chorus::detail
