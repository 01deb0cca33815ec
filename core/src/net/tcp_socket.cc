#include "net/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace chorus::detail {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

int millis_until(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

// One IPv4/IPv6 address of `host` for `port`; `passive` for listening.
Status resolve(const std::string& host, int port, bool passive, sockaddr_storage* out, socklen_t* len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::invalid_argument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  std::memcpy(out, found->ai_addr, found->ai_addrlen);
  *len = found->ai_addrlen;
  freeaddrinfo(found);
  return Status::ok();
}

// One non-blocking connect, waited for until `deadline` at most (a dropped
// SYN would otherwise hold a blocking connect for minutes); 0 or the errno.
int connect_before(int fd, const sockaddr_storage& addr, socklen_t len, Deadline deadline) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) return 0;
  if (errno != EINPROGRESS && errno != EINTR) return errno;
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    const int rc = ::poll(&p, 1, millis_until(deadline));
    if (rc > 0) {
      int error = 0;
      socklen_t error_len = sizeof error;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_len) != 0) return errno;
      return error;
    }
    if (rc < 0 && errno != EINTR) return errno;
    if (Clock::now() >= deadline) return ETIMEDOUT;
  }
}

}  // namespace

bool connected_to_itself(int fd) {
  sockaddr_storage here{}, there{};
  socklen_t here_len = sizeof here, there_len = sizeof there;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&here), &here_len) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&there), &there_len) != 0) return false;
  return here_len == there_len && std::memcmp(&here, &there, here_len) == 0;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status listen_on(const std::string& host, int port, Socket* out, int* bound_port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  Status s = resolve(host, port, true, &addr, &len);
  if (!s.is_ok()) return s;
  Socket sock(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Status::unknown_error("socket(): " + errno_text(errno));
  const int one = 1;
  // Reuse a port in TIME_WAIT from a job that just ended; a live listener still refuses.
  setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(sock.fd(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int e = errno;
    return Status::precondition_error("cannot listen on " + (host.empty() ? std::string("*") : host) + ":" +
                                      std::to_string(port) + ": " + errno_text(e) +
                                      (e == EADDRINUSE ? " (another job or process holds that port)" : ""));
  }
  if (::listen(sock.fd(), 1024) != 0) return Status::unknown_error("listen(): " + errno_text(errno));
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  *bound_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  *out = std::move(sock);
  return Status::ok();
}

Status connect_to(const std::string& host, int port, Deadline deadline, Socket* out) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  Status s = resolve(host, port, false, &addr, &len);
  if (!s.is_ok()) return s;
  std::string last = "no attempt";
  do {
    Socket sock(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!sock.valid()) return Status::unknown_error("socket(): " + errno_text(errno));
    int e = connect_before(sock.fd(), addr, len, deadline);
    // Nobody listens yet and the kernel gave this socket the very port it
    // dials (a loopback port just freed): TCP's simultaneous open joins the
    // socket to itself, which would hold the port the listener needs.
    if (e == 0 && connected_to_itself(sock.fd())) e = EADDRINUSE;
    if (e == 0) {
      // The callers exchange with blocking sockets or bounded polls alike.
      fcntl(sock.fd(), F_SETFL, fcntl(sock.fd(), F_GETFL) & ~O_NONBLOCK);
      *out = std::move(sock);
      return Status::ok();
    }
    last = errno_text(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // nobody listens yet: try again
  } while (Clock::now() < deadline);
  return Status::timeout("cannot connect to " + host + ":" + std::to_string(port) + " (" + last + ")");
}

Status send_exactly(int fd, const void* data, size_t n, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Status::unknown_error("send: " + errno_text(errno));
    }
    if (Clock::now() >= deadline) return Status::timeout("send timed out");
    pollfd pf{fd, POLLOUT, 0};
    ::poll(&pf, 1, millis_until(deadline));
  }
  return Status::ok();
}

Status recv_exactly(int fd, void* data, size_t n, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k == 0) return Status::unknown_error("connection closed");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Status::unknown_error("recv: " + errno_text(errno));
    }
    if (Clock::now() >= deadline) return Status::timeout("receive timed out");
    pollfd pf{fd, POLLIN, 0};
    ::poll(&pf, 1, millis_until(deadline));
  }
  return Status::ok();
}

void tune_peer_socket(int fd, double peer_timeout_seconds) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int buffer = 4 << 20;  // large transfers: fewer wakeups per segment
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  // Probes after a third of the timeout of silence, three more a ninth
  // apart: a host that vanished fails the socket in about 2/3 of it.
  const int timeout = std::max(3, static_cast<int>(peer_timeout_seconds));
  const int idle = std::max(1, timeout / 3), interval = std::max(1, timeout / 9), count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // Data the peer's host never acknowledges fails the socket as well.
  const unsigned user_timeout_ms = static_cast<unsigned>(timeout) * 1000u;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

namespace {

std::string address_text(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
  } else {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  }
  return text;
}

}  // namespace

std::string peer_address(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return address_text(addr);
}

std::string local_address(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return address_text(addr);
}

}  // namespace chorus::detail
