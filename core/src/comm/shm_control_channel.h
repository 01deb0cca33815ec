#pragma once
// The control plane of ranks that all run on one host, through shared
// memory instead of their sockets: a ring (comm/shm_ring.h) from each worker
// to rank 0 and one from rank 0 to each worker, in one segment
// (comm/shared_segment.h). Sends and polls touch only that memory: no
// system call, and no loopback round trip of the kernel's. A send returns
// once the whole message is in the ring: with the reader behind, it reads
// what comes to it meanwhile (kept for its polls), so two ranks sending
// long messages to each other both get on, and nothing waits unsent while
// this rank runs a collective.
//
// The transport's own channel stays beside it for what shared memory cannot
// tell: whether a peer is gone. It carries no control message; the polls
// drive it now and then (every kWatchInterval), so its sockets are read and a
// closed connection or a silent host is noticed as before, and failure() is
// its failure. close() meets every rank in shared memory (each keeps reading
// what comes meanwhile, so a long message under way can finish), then closes
// the transport's channel.

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/control_channel.h"
#include "comm/shm_ring.h"

namespace chorus::detail {

class ShmControlChannel final : public ControlChannel {
 public:
  using Clock = std::chrono::steady_clock;
  /// Payload bytes of each ring; longer messages go in pieces.
  static constexpr size_t kRingBytes = size_t{64} << 10;
  /// How often the polls drive the transport's channel to hear of lost peers.
  static constexpr std::chrono::microseconds kWatchInterval{1000};

  /// Shared memory for `size` ranks with rings of `ring_bytes` (zeroed).
  static size_t bytes_for(int size, size_t ring_bytes);
  /// Rank `rank` of `size` over `base` (bytes_for(size, ring_bytes), zeroed
  /// before any rank uses it; `mapping` keeps it mapped). `sockets`: the
  /// transport's channel, which must outlive this one.
  ShmControlChannel(int rank, int size, char* base, size_t ring_bytes, std::shared_ptr<void> mapping,
                    ControlChannel& sockets);

  Status send_to_coordinator(std::string bytes) override;
  bool poll_from_workers(int* from_rank, std::string* bytes) override;
  Status send_to_workers(const std::string& bytes) override;
  bool poll_from_coordinator(std::string* bytes) override;
  bool close(std::chrono::milliseconds bound) override;
  Status failure() const override { return failure_.is_ok() ? sockets_.failure() : failure_; }

 private:
  int peer_of(size_t ring) const { return rank_ == 0 ? static_cast<int>(ring) + 1 : 0; }
  Status send(ShmRing& ring, const std::string& bytes);
  void read_waiting();
  bool take(int* from_rank, std::string* bytes);
  void watch_sockets();

  const int rank_;
  const int size_;
  std::shared_ptr<void> mapping_;
  ControlChannel& sockets_;
  std::atomic<int32_t>* at_close_;  // ranks that reached close() with nothing left to send
  std::vector<ShmRing> out_;        // a worker: to rank 0; rank 0: to worker w at w - 1
  std::vector<ShmRing> in_;         // the same peers, the other way
  std::deque<std::pair<int, std::string>> read_early_;  // read while a send waited: the polls' first
  size_t next_in_ = 0;              // rank 0 takes from the workers in turn
  Clock::time_point last_watch_;
  Status failure_;
};

/// Collective over `comm`, whose `size` ranks the caller knows to share
/// this host: the shared-memory channel of rank `rank` beside `sockets`.
/// Leaves *out empty, with an OK status, when the segment cannot be set up
/// (the same on every rank); `*why_not` then says why.
Status open_shm_control_channel(Communicator& comm, int rank, int size, ControlChannel& sockets,
                                std::unique_ptr<ControlChannel>* out, std::string* why_not);

}  // namespace chorus::detail
