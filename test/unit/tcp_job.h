#pragma once
// In-process ranks over the real TCP transport: each rank a thread with its
// own Runtime over a TCP backend, meeting at 127.0.0.1 on a free port. The
// runtimes are built on their ranks' threads, since each constructor waits
// for the rendezvous that needs the others.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "chorus/runtime.h"
#include "comm/tcp/tcp_backend.h"
#include "runtime/runtime_access.h"
#include "thread_ranks.h"

namespace chorus::test {

/// A port nobody listens at now (the kernel's pick).
inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// The meeting of rank `rank` of a job of `size` at `port`.
inline detail::TcpMeeting tcp_meeting(int rank, int size, int port) {
  detail::TcpMeeting m;
  m.rank = rank;
  m.size = size;
  m.master_port = port;
  return m;
}

/// Runs body(runtime, rank) on `size` ranks over TCP; rethrows the first failure.
template <class Body>
void run_tcp_ranks(int size, Body body, RuntimeOptions options) {
  const int port = free_tcp_port();
  on_thread_ranks_rethrowing(size, [&](int r) {
    std::unique_ptr<Runtime> runtime =
        detail::RuntimeAccess::make(detail::make_tcp_backend(options, tcp_meeting(r, size, port)), options);
    body(*runtime, r);
  });
}

}  // namespace chorus::test
