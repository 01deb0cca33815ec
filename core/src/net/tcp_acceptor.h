#pragma once
// The accepting side of the handshake (net/tcp_handshake.h) for many
// connections at once: one poll over the listener and every connection
// still proving itself, so a silent or slow one never holds up the others.
// A connection counts only once it proved itself; one that fails the proof,
// sends something else, closes, or is still unproven after the handshake
// timeout is closed and reported once per address. At most kMaxPending
// wait at once (the oldest goes first), so strangers cannot use up this
// process's descriptors.

#include <cstddef>
#include <deque>
#include <set>
#include <string>

#include "chorus/status.h"
#include "net/tcp_handshake.h"
#include "net/tcp_socket.h"

namespace chorus::detail {

struct ProvenConnection {
  Socket socket;  // non-blocking
  HandshakeClaim claim;
  std::string address;
};

class HandshakeAcceptor {
 public:
  static constexpr size_t kMaxPending = 64;

  /// Accepts on `listener` connections whose claim has `purpose`, reaches
  /// `rank` and names `mesh_key`; the other fields are the caller's to judge.
  HandshakeAcceptor(const Socket& listener, const TcpAuth& auth, HandshakePurpose purpose, int rank, uint64_t mesh_key);
  /// The next connection that proved itself; a timeout status when none did
  /// before `deadline`.
  Status next(Deadline deadline, ProvenConnection* out);
  /// Connections closed unproven so far.
  int refused() const { return refused_; }

 private:
  struct Pending {
    Socket socket;
    std::string address;
    Deadline until;
    std::string in;
    bool challenged = false;
    Nonce nc{}, ns{};
    HandshakeClaim claim;
  };

  void accept_waiting();
  void refuse(Pending& p, const std::string& why, bool tell);
  void read_from(Pending& p);
  void on_hello(Pending& p);
  void on_proof(Pending& p);
  void expire();

  const Socket& listener_;
  const TcpAuth& auth_;
  const HandshakePurpose purpose_;
  const int rank_;
  const uint64_t mesh_key_;
  const std::string key_;
  std::deque<Pending> pending_;  // oldest first
  std::deque<ProvenConnection> proven_;
  std::set<std::string> reported_;
  int refused_ = 0;
};

}  // namespace chorus::detail
