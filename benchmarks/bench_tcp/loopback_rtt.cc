// The floor under target 5 of issue 19 (scripts/bench_tcp.sh, section local):
// the round trip of a control-plane-sized message (16-byte header and a
// 100-byte body, as TcpMesh frames it) between two processes on this host,
// the reader busy-polling with nonblocking recv as the background loop does,
// over loopback TCP and over a Unix socket pair. Chorus over TCP on one host
// can come no closer to Chorus over MPI (shared memory) than the TCP figure.
//   build/benchmarks/loopback_rtt
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

constexpr int kRounds = 20000;
constexpr size_t kHeader = 16, kBody = 100;

void read_exactly(int fd, char* into, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t k = recv(fd, into + got, n - got, MSG_DONTWAIT);
    if (k > 0) {
      got += static_cast<size_t>(k);
    } else {
      sched_yield();
    }
  }
}

bool tcp_pair(int fds[2]) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listener, 1) != 0) return false;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  fds[0] = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fds[0], reinterpret_cast<sockaddr*>(&addr), len) != 0) return false;
  fds[1] = accept(listener, nullptr, nullptr);
  close(listener);
  const int one = 1;
  for (int i = 0; i < 2; ++i) setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fds[1] >= 0;
}

double median_round_trip_us(int fds[2]) {
  char buf[kHeader + kBody] = {};
  if (fork() == 0) {  // the coordinator: answers each request
    for (int i = 0; i < kRounds; ++i) {
      read_exactly(fds[1], buf, kHeader);
      read_exactly(fds[1], buf + kHeader, kBody);
      send(fds[1], buf, sizeof buf, 0);
    }
    _exit(0);
  }
  std::vector<double> us;
  for (int i = 0; i < kRounds; ++i) {
    const auto start = std::chrono::steady_clock::now();
    send(fds[0], buf, sizeof buf, 0);
    read_exactly(fds[0], buf, kHeader);
    read_exactly(fds[0], buf + kHeader, kBody);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  wait(nullptr);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main() {
  int tcp[2], unix_pair[2];
  if (!tcp_pair(tcp) || socketpair(AF_UNIX, SOCK_STREAM, 0, unix_pair) != 0) {
    std::perror("loopback_rtt: sockets");
    return 1;
  }
  std::printf("loopback TCP round trip, median %.1f us\n", median_round_trip_us(tcp));
  std::printf("Unix socket round trip, median %.1f us\n", median_round_trip_us(unix_pair));
  return 0;
}
