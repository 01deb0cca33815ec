#pragma once
// One TCP connection to every other rank, carrying framed messages
// (channel, tag, length) in both directions, driven without blocking from
// the one thread that owns the backend. Sends are queued and written as the
// socket takes them (a send's memory must stay untouched until it
// completed, or until the call that broke the mesh returned); receives are either posted into the caller's memory, matched
// per (peer, channel, tag) in posting order, or, for the control channel,
// collected from any rank in arrival order.
//
// The first failure (a peer that closed its connection, a socket error, a
// peer whose host stopped answering within the peer timeout) breaks the
// mesh for good: every later call returns the same error, which names the rank.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chorus/status.h"
#include "net/tcp_socket.h"

namespace chorus::detail {

// kGone: the sender stops because it lost the ranks listed (a uint32 count,
// int32 each), for the reason that follows as text; its own connection ends
// next, which is then no news. kHeartbeat: an empty
// frame that says "this process still runs" on a link that was quiet.
enum class TcpChannel : uint32_t { kControl = 0, kCollective = 1, kRing = 2, kClose = 3, kGone = 4, kHeartbeat = 5 };

class TcpMesh {
 public:
  using Ticket = int64_t;
  /// `links[r]` connects to rank r (none for this rank). `peer_timeout_seconds`
  /// goes to the sockets (tune_peer_socket) and into error messages.
  TcpMesh(int rank, std::vector<Socket> links, double peer_timeout_seconds);
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }

  /// Queues a frame to `peer`; `data` stays untouched until the ticket is done.
  Status send(int peer, TcpChannel channel, uint32_t tag, const void* data, int64_t bytes, Ticket* ticket);
  /// Queues a frame whose bytes the mesh keeps (no ticket: it is never waited on).
  Status send_owned(int peer, TcpChannel channel, uint32_t tag, std::shared_ptr<const std::string> bytes);
  /// Posts a receive of exactly `bytes` bytes from `peer` into `data`.
  Status receive(int peer, TcpChannel channel, uint32_t tag, void* data, int64_t bytes, Ticket* ticket);
  /// Drives the sockets until `ticket` completed; the mesh's error otherwise.
  Status wait(Ticket ticket);
  /// Next control message from any rank, if one arrived (drives the sockets once, without waiting).
  bool take_control(int* from, std::string* bytes);
  /// Reads and writes what the sockets take, waiting up to `wait_ms` for
  /// something to happen; the mesh's error when it broke.
  Status progress(int wait_ms);
  /// Payload bytes of ring and collective frames that arrived before their
  /// receive was posted: read into the mesh's own memory and copied again
  /// (what the ring's early receives avoid). A receive posted while its
  /// frame arrives takes the rest of it in place.
  int64_t bytes_kept_aside() const { return bytes_kept_aside_; }
  /// OK, or the error that broke the mesh (it names the rank).
  const Status& failure() const { return failure_; }
  /// The ranks whose loss broke the mesh (their connections failed, or a
  /// rank still connected told of them); empty while it holds.
  const std::vector<int>& lost() const { return lost_; }
  /// Sends a close frame to every rank and waits until every rank's came
  /// and everything queued went out, or `bound` passed. Connections that
  /// end after that are no error.
  bool close(std::chrono::milliseconds bound);
  /// The peers whose close frame has not arrived (after close() gave up).
  std::vector<int> not_closed() const;
  /// Liveness for a mesh that one thread drives all the time (the engine's):
  /// progress() sends a heartbeat on every link that was quiet for a quarter
  /// of `timeout_seconds`, and a peer from which nothing at all arrived for
  /// `timeout_seconds` is lost (a stopped process or a frozen host: the kernel
  /// still acknowledges TCP for them). 0 turns it off (the default).
  void watch_liveness(double timeout_seconds);

 private:
  struct Outgoing {
    std::shared_ptr<const std::string> owned;  // header, or owned payload
    const char* data;
    size_t left;
    Ticket ticket;  // 0: none
    bool header = false;
  };
  struct Posted {
    char* data;
    int64_t bytes;
    Ticket ticket;
  };
  struct Peer {
    Socket socket;
    std::deque<Outgoing> out;
    char header[16];
    size_t header_got = 0;
    // The frame being read: into a posted receive, or into `inbound`.
    char* target = nullptr;
    size_t target_left = 0;
    Ticket target_ticket = 0;
    std::string inbound;
    uint32_t channel = 0, tag = 0;
    bool closing = false;  // its close frame arrived: an end of stream is expected
    // Liveness: bytes each way (counted on the hot path, no clock read), and
    // when keep_alive() last saw them grow.
    uint64_t heard = 0, sent = 0, heard_seen = 0, sent_seen = 0;
    Clock::time_point last_heard{}, last_sent{};
  };
  using Key = std::tuple<int, uint32_t, uint32_t>;  // peer, channel, tag

  void enqueue(int peer, TcpChannel channel, uint32_t tag, std::shared_ptr<const std::string> owned, const void* data,
               int64_t bytes, Ticket ticket);
  Status queue(int peer, TcpChannel channel, uint32_t tag, std::shared_ptr<const std::string> owned,
               const void* data, int64_t bytes, Ticket ticket);
  Status fail(Status status);
  void drop_borrowed();
  Status peer_error(int peer, const std::string& what);
  Status settle_losses();
  std::string why_lost() const;
  void tell_the_others(const std::string& why);
  void flush_before(Deadline until);
  void heard_gone(int peer, const std::string& payload);
  Status write_some(int peer);
  Status read_some(int peer);
  Status take_over_frame(int peer, const Key& key, char* data, int64_t bytes, Ticket ticket, bool* taken);
  Status begin_frame(int peer);
  Status end_frame(int peer);
  Status deliver(int peer, uint32_t channel, uint32_t tag, std::string message);
  Status check_size(int peer, uint32_t tag, int64_t expected, uint64_t got);
  void keep_alive();
  void peer_silent(int peer);

  const int rank_;
  const double peer_timeout_seconds_;
  std::vector<Peer> peers_;
  Status failure_;
  Ticket next_ticket_ = 1;
  std::unordered_map<Ticket, bool> pending_;  // ticket -> done
  std::map<Key, std::deque<Posted>> posted_;
  std::map<Key, std::deque<std::string>> unmatched_;
  std::deque<std::pair<int, std::string>> control_;
  int closes_seen_ = 0;
  int64_t bytes_kept_aside_ = 0;
  std::vector<int> lost_;  // peers whose connections failed, not yet settled
  std::string lost_why_;   // the first socket error ("": closed)
  bool lost_silent_ = false;             // lost_why_ is the silence of a peer that still holds its connection
  std::string told_why_;                 // the reason of the first rank that told of its losses (kGone)
  double liveness_timeout_seconds_ = 0;  // 0: off
  Clock::duration heartbeat_every_{}, silence_limit_{};
  Clock::time_point next_liveness_check_{};
};

}  // namespace chorus::detail
