// Gloo's TCP pairs against plain blocking sockets, two processes on one
// host: median round trip of a 4 KiB message and one-way rate of 64 MiB.
// Built as gloo_pingpong where Gloo is installed (benchmarks/CMakeLists.txt):
//   build/benchmarks/gloo_pingpong gloo|socket (forks its second rank itself)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

using Clock = std::chrono::steady_clock;
using Exchange = std::function<void(char*, size_t, bool send)>;

static void measure(int rank, const Exchange& xfer) {
  std::vector<char> buf(64 << 20, 1);
  std::vector<double> rtt;
  for (int i = 0; i < 2000; ++i) {
    const auto t0 = Clock::now();
    if (rank == 0) { xfer(buf.data(), 4096, true); xfer(buf.data(), 4096, false); }
    else { xfer(buf.data(), 4096, false); xfer(buf.data(), 4096, true); }
    rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    if (rank == 0) { xfer(buf.data(), buf.size(), true); xfer(buf.data(), 1, false); }
    else { xfer(buf.data(), buf.size(), false); xfer(buf.data(), 1, true); }
    rates.push_back(buf.size() / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
  }
  std::sort(rtt.begin(), rtt.end());
  std::sort(rates.begin(), rates.end());
  if (rank == 0) std::printf("4 KiB round trip median %.1f us (p90 %.1f); 64 MiB %.2f GB/s (median of 5)\n",
                             rtt[rtt.size() / 2], rtt[rtt.size() * 9 / 10], rates[2]);
}

static void run_gloo(int rank) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  gloo::rendezvous::FileStore store("/tmp/pingpong_store");
  ctx->connectFullMesh(store, dev);
  const int peer = 1 - rank;
  measure(rank, [&](char* p, size_t n, bool send) {
    auto b = ctx->createUnboundBuffer(p, n);
    if (send) { b->send(peer, 0); b->waitSend(); } else { b->recv(peer, 0); b->waitRecv(); }
  });
}

static void full(int fd, char* p, size_t n, bool send) {
  while (n > 0) {
    const ssize_t k = send ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k <= 0) { std::perror("socket"); _exit(1); }
    p += k; n -= static_cast<size_t>(k);
  }
}

static void run_socket(int rank) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(29517);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (rank == 0) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd, 1);
    const int c = accept(fd, nullptr, nullptr);
    close(fd);
    fd = c;
  } else {
    while (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) { close(fd); usleep(10000); fd = socket(AF_INET, SOCK_STREAM, 0); }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  measure(rank, [&](char* p, size_t n, bool send) { full(fd, p, n, send); });
}

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "socket";
  std::system("rm -rf /tmp/pingpong_store; mkdir -p /tmp/pingpong_store");
  const pid_t child = fork();
  const int rank = child == 0 ? 1 : 0;
  if (kind == "gloo") run_gloo(rank); else run_socket(rank);
  if (child != 0) waitpid(child, nullptr, 0);
  return 0;
}
