#pragma once
// Plain TCP sockets for the transport without MPI (comm/tcp) and its
// rendezvous (rendezvous/): listening, connecting with retries until a
// deadline, blocking exchanges bounded by a deadline (the rendezvous), and
// the options every peer connection gets.

#include <chrono>
#include <cstddef>
#include <string>

#include "chorus/status.h"

namespace chorus::detail {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// Owns one file descriptor; closes it when it goes.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

/// Listens on `host` (empty: every interface) at `port` (0: a free one the
/// kernel picks); `*bound_port` gets the port. A port in use is an error
/// that names it.
Status listen_on(const std::string& host, int port, Socket* out, int* bound_port);
/// Connects to host:port, retrying while nobody listens there yet, until
/// `deadline`; a socket the kernel joined to itself is never returned.
Status connect_to(const std::string& host, int port, Deadline deadline, Socket* out);
/// Whether a connected socket's two ends are one address and port (a
/// loopback connect that found no listener and met itself).
bool connected_to_itself(int fd);
/// Sends or receives exactly `n` bytes before `deadline` (the socket may be
/// blocking or not). A closed connection or the deadline is an error.
Status send_exactly(int fd, const void* data, size_t n, Deadline deadline);
Status recv_exactly(int fd, void* data, size_t n, Deadline deadline);
/// Options of an established connection between two ranks: no Nagle delay,
/// non-blocking, large buffers, and kernel keepalive probes plus a user
/// timeout so that a peer whose host vanished fails the socket within
/// `peer_timeout_seconds` (a killed process closes it at once).
void tune_peer_socket(int fd, double peer_timeout_seconds);
/// The address of the other end of a connected socket.
std::string peer_address(int fd);
/// The address of this end of a connected socket (the interface it leaves by).
std::string local_address(int fd);

}  // namespace chorus::detail
