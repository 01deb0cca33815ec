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
#include "comm/tcp/tcp_mesh.h"
#include "rendezvous/tcp_rendezvous.h"
#include "api/runtime_access.h"
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

/// Rank `rank` of a job of `size` meeting at 127.0.0.1:`port`, as the rendezvous takes it.
inline detail::TcpJobSpec tcp_spec(int rank, int size, int port) {
  detail::TcpJobSpec s;
  s.rank = rank;
  s.size = size;
  s.master_addr = "127.0.0.1";
  s.master_port = port;
  s.rank_var = s.size_var = s.addr_var = s.port_var = "test";
  return s;
}

/// `size` ranks' meshes, each connected to the others over loopback (met
/// on threads); empty when the rendezvous failed.
inline std::vector<std::unique_ptr<detail::TcpMesh>> tcp_meshes(int size) {
  const int port = free_tcp_port();
  std::vector<std::unique_ptr<detail::TcpMesh>> meshes(static_cast<size_t>(size));
  const std::vector<Status> met = on_thread_ranks<Status>(size, [&](int rank) {
    detail::TcpWorld world;
    Status s = detail::tcp_rendezvous(tcp_spec(rank, size, port), 10.0, &world);
    if (s.is_ok()) meshes[static_cast<size_t>(rank)] = std::make_unique<detail::TcpMesh>(rank, std::move(world.links), 30);
    return s;
  });
  for (const Status& s : met) {
    if (!s.is_ok()) return {};
  }
  return meshes;
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
