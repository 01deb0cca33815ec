#include "comm/shm/shm_control_channel.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "comm/shm/shared_segment.h"

namespace chorus::detail {

namespace {
// One flag per rank that reached close(), on cache lines of their own before the rings.
size_t close_flags_bytes(int size) { return (static_cast<size_t>(std::max(size, 1)) * 4 + 127) / 128 * 128; }
}

size_t ShmControlChannel::bytes_for(int size, size_t ring_bytes) {
  return close_flags_bytes(size) + 2 * static_cast<size_t>(std::max(size - 1, 0)) * ShmRing::bytes_for(ring_bytes);
}

// Worker w's rings: w -> 0, then 0 -> w.
ShmControlChannel::ShmControlChannel(int rank, int size, char* base, size_t ring_bytes, std::shared_ptr<void> mapping,
                                     ControlChannel& sockets)
    : rank_(rank),
      size_(size),
      mapping_(std::move(mapping)),
      sockets_(sockets),
      at_close_(reinterpret_cast<std::atomic<int32_t>*>(base)),
      last_watch_(Clock::now()) {
  const size_t ring = ShmRing::bytes_for(ring_bytes);
  auto up = [&](int w) { return base + close_flags_bytes(size) + 2 * static_cast<size_t>(w - 1) * ring; };
  for (int w = 1; w < size; ++w) {
    if (rank != 0 && w != rank) continue;
    ShmRing to_coordinator(up(w), ring_bytes), to_worker(up(w) + ring, ring_bytes);
    out_.push_back(rank == 0 ? to_worker : to_coordinator);
    in_.emplace_back(rank == 0 ? to_coordinator : to_worker);
  }
}

Status ShmControlChannel::send_to_coordinator(std::string bytes) {
  Status s = failure();
  if (!s.is_ok()) return s;
  ShmRing& ring = out_.front();
  if (ring.write(bytes)) return Status::ok();
  ring.sent_elsewhere();  // counted first: rank 0 reads the count before the socket
  return sockets_.send_to_coordinator(std::move(bytes));
}

// Every worker gets it the same way: all through their rings, or all over the sockets.
Status ShmControlChannel::send_to_workers(const std::string& bytes) {
  Status s = failure();
  if (!s.is_ok()) return s;
  bool all_take = true;
  for (const ShmRing& ring : out_) all_take = all_take && ring.takes(bytes.size());
  for (ShmRing& ring : out_) {
    if (all_take) ring.write(bytes);  // it takes it: only the readers make more room
    else ring.sent_elsewhere();
  }
  return all_take ? Status::ok() : sockets_.send_to_workers(bytes);
}

// Messages that came over the sockets, each to its peer's queue.
void ShmControlChannel::read_sockets() {
  int from = 0;
  std::string bytes;
  while (rank_ == 0 ? sockets_.poll_from_workers(&from, &bytes) : sockets_.poll_from_coordinator(&bytes)) {
    in_[index_of(from)].from_sockets.push_back(std::move(bytes));
  }
}

// The polls cost no system call while no message is due over the sockets; the
// sockets are driven every kWatchInterval, which is how soon a lost peer is heard of.
void ShmControlChannel::watch_sockets() {
  const Clock::time_point now = Clock::now();
  if (now - last_watch_ < kWatchInterval) return;
  last_watch_ = now;
  read_sockets();
}

bool ShmControlChannel::take_from(Inbox& in, std::string* bytes) {
  const ShmRing::Next next = in.ring.read(bytes);
  if (next != ShmRing::Next::kElsewhere) return next == ShmRing::Next::kMessage;
  if (in.from_sockets.empty()) read_sockets();  // a message is due there: a system call only now
  if (in.from_sockets.empty()) return false;    // still on the way
  *bytes = std::move(in.from_sockets.front());
  in.from_sockets.pop_front();
  in.ring.took_elsewhere();
  return true;
}

// The next message of the first peer in turn that has one, so one busy
// worker does not hold up the others.
bool ShmControlChannel::take(int* from_rank, std::string* bytes) {
  watch_sockets();
  for (size_t k = 0; k < in_.size(); ++k) {
    const size_t i = (next_in_ + k) % in_.size();
    if (!take_from(in_[i], bytes)) continue;
    if (from_rank) *from_rank = peer_of(i);
    next_in_ = i + 1;
    return true;
  }
  return false;
}

bool ShmControlChannel::poll_from_workers(int* from_rank, std::string* bytes) { return take(from_rank, bytes); }

bool ShmControlChannel::poll_from_coordinator(std::string* bytes) { return take(nullptr, bytes); }

// Sends are done when they return (what went over the sockets, the
// transport's close() flushes): a rank marks itself and waits for the others.
bool ShmControlChannel::close(std::chrono::milliseconds bound) {
  const Clock::time_point deadline = Clock::now() + bound;
  auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                    std::chrono::milliseconds(1));
  };
  if (failure().is_ok()) at_close_[rank_].store(1, std::memory_order_release);
  std::string dropped;
  while (failure().is_ok()) {
    if (not_marked().empty()) return sockets_.close(left());
    if (Clock::now() >= deadline) return false;
    while (take(nullptr, &dropped)) {  // nothing is acted on after the shutdown
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return sockets_.close(left());  // a peer is gone: the transport lets the news out
}

std::vector<int> ShmControlChannel::not_marked() const {
  std::vector<int> out;
  for (int r = 0; r < size_; ++r) {
    if (at_close_[r].load(std::memory_order_acquire) == 0) out.push_back(r);
  }
  return out;
}

// Those not at the shared-memory close, or those the sockets' close missed.
std::vector<int> ShmControlChannel::not_at_close() const {
  std::vector<int> missing = not_marked();
  return missing.empty() ? sockets_.not_at_close() : missing;
}

Status open_shm_control_channel(Communicator& comm, int rank, int size, ControlChannel& sockets,
                                std::unique_ptr<ControlChannel>* out, std::string* why_not) {
  out->reset();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = ShmControlChannel::bytes_for(size, ShmControlChannel::kRingBytes);
  SegmentShape shape;
  shape.per_rank = shape.head = (bytes + page - 1) / page * page;
  SegmentMapping mapping;
  bool mapped = false;
  std::string error;
  Status s = share_segment(comm, rank, shape, false, &mapping, &mapped, &error);
  if (!mapped) {
    *why_not = error;  // empty: another rank's failed
    return s;
  }
  const size_t total = shape.total();
  std::shared_ptr<void> unmap(mapping.base, [total](void* p) { munmap(p, total); });
  *out = std::make_unique<ShmControlChannel>(rank, size, static_cast<char*>(mapping.base),
                                             ShmControlChannel::kRingBytes, std::move(unmap), sockets);
  return Status::ok();
}

}  // namespace chorus::detail
