// A mesh that breaks while a caller's sends are queued: the callers free
// that memory once their call failed, and close() must not send from it;
// a close that gives up names the ranks it missed.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/tcp/tcp_mesh.h"
#include "tcp_job.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

// Everything that arrives on `fd` until it closes.
std::string read_all(int fd) {
  std::string got;
  char buffer[1 << 16];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) got.append(buffer, static_cast<size_t>(n));
  return got;
}

struct Frame {
  uint32_t channel = 0, tag = 0;
  std::string payload;
};

std::vector<Frame> frames_of(const std::string& stream) {
  std::vector<Frame> out;
  for (size_t at = 0; at + 16 <= stream.size();) {
    Frame f;
    uint64_t n = 0;
    std::memcpy(&f.channel, stream.data() + at, 4);
    std::memcpy(&f.tag, stream.data() + at + 4, 4);
    std::memcpy(&n, stream.data() + at + 8, 8);
    f.payload = stream.substr(at + 16, n);
    at += 16 + n;
    out.push_back(std::move(f));
  }
  return out;
}

// Rank 0's links of a 3-rank mesh over socket pairs, and the far ends: what
// ranks 1 and 2 would read and write (rank 1's as a raw descriptor, to close
// when the test says).
struct RankZeroLinks {
  std::vector<Socket> links{3};
  int far_1 = -1;
  Socket far_2;
};

RankZeroLinks rank_zero_links() {
  int to_1[2], to_2[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to_1) == 0);
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to_2) == 0);
  RankZeroLinks out;
  out.links[1] = Socket(to_1[0]);
  out.links[2] = Socket(to_2[0]);
  out.far_1 = to_1[1];
  out.far_2 = Socket(to_2[1]);
  return out;
}

}  // namespace

TEST_CASE("A broken mesh sends nothing more from the callers' memory", "[tcp][mesh]") {
  RankZeroLinks ends = rank_zero_links();
  auto mesh = std::make_unique<TcpMesh>(0, std::move(ends.links), 30);
  // Far more than the socket holds, so it is under way when the mesh breaks;
  // no more than close()'s 500 ms flush can write under a sanitizer.
  std::vector<char> big(8 << 20, 0x11), small(1024, 0x22);
  TcpMesh::Ticket t1 = 0, t2 = 0;
  REQUIRE(mesh->send(2, TcpChannel::kCollective, 7, big.data(), static_cast<int64_t>(big.size()), &t1).is_ok());
  REQUIRE(mesh->send(2, TcpChannel::kCollective, 8, small.data(), static_cast<int64_t>(small.size()), &t2).is_ok());
  ::close(ends.far_1);  // rank 1 goes: the mesh breaks
  Status s;
  for (int k = 0; k < 50 && s.is_ok(); ++k) s = mesh->progress(20);
  REQUIRE_FALSE(s.is_ok());
  std::memset(big.data(), 0xEE, big.size());  // as the callers free it
  std::memset(small.data(), 0xEE, small.size());
  std::string stream;
  std::thread reader([&] { stream = read_all(ends.far_2.fd()); });
  mesh->close(std::chrono::milliseconds(2000));
  mesh.reset();
  reader.join();
  const std::vector<Frame> frames = frames_of(stream);
  REQUIRE(frames.size() >= 1);
  CHECK(frames[0].tag == 7);
  // The frame under way, whole and as it was.
  CHECK(frames[0].payload.size() == big.size());
  CHECK(std::count(frames[0].payload.begin(), frames[0].payload.end(), '\x11') ==
        static_cast<std::ptrdiff_t>(big.size()));
  for (const Frame& f : frames) CHECK(f.tag != 8);             // the frame not begun: dropped
}

TEST_CASE("A mesh's close names the ranks whose close never came", "[tcp][mesh]") {
  const int size = 3;
  std::vector<std::unique_ptr<TcpMesh>> meshes = test::tcp_meshes(size);
  REQUIRE(meshes.size() == static_cast<size_t>(size));
  const std::vector<std::vector<int>> missing = test::on_thread_ranks<std::vector<int>>(size, [&](int rank) {
    if (rank == 2) return std::vector<int>{-1};  // stopped before its close: its connections stay open
    TcpMesh& mesh = *meshes[static_cast<size_t>(rank)];
    if (mesh.close(std::chrono::milliseconds(300))) return std::vector<int>{};
    return mesh.not_closed();
  });
  REQUIRE(missing[0] == std::vector<int>{2});
  REQUIRE(missing[1] == std::vector<int>{2});
}

TEST_CASE("A receive whose bytes came just before its peer closed completes", "[tcp][mesh]") {
  RankZeroLinks ends = rank_zero_links();
  TcpMesh mesh(0, std::move(ends.links), 30);
  std::vector<char> got(1024, 0);
  TcpMesh::Ticket t = 0;
  REQUIRE(mesh.receive(1, TcpChannel::kCollective, 5, got.data(), static_cast<int64_t>(got.size()), &t).is_ok());
  // Rank 1's last frame and its end of stream in the socket together, as
  // when a peer that finished its part closes at once.
  std::string frame(16 + got.size(), '\x33');
  const uint32_t channel = static_cast<uint32_t>(TcpChannel::kCollective), tag = 5;
  const uint64_t n = got.size();
  std::memcpy(&frame[0], &channel, 4);
  std::memcpy(&frame[4], &tag, 4);
  std::memcpy(&frame[8], &n, 8);
  REQUIRE(::write(ends.far_1, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size()));
  ::close(ends.far_1);
  REQUIRE(mesh.wait(t).is_ok());  // the transfer had all its bytes
  CHECK(got == std::vector<char>(got.size(), '\x33'));
  TcpMesh::Ticket next = 0;
  // The loss fails what follows.
  CHECK_FALSE(mesh.receive(1, TcpChannel::kCollective, 6, got.data(), 4, &next).is_ok());
}

// Liveness (TcpMesh::watch_liveness): a peer that runs but sends nothing of
// its own stays alive through heartbeats; one that stopped (its connection
// open, nothing driving it) is lost after the limit, named with the knob.
TEST_CASE("A quiet peer stays alive through heartbeats; a stopped one is named lost", "[tcp][mesh][liveness]") {
  const int size = 3;
  std::vector<std::unique_ptr<TcpMesh>> meshes = test::tcp_meshes(size);
  REQUIRE(meshes.size() == static_cast<size_t>(size));
  for (auto& m : meshes) m->watch_liveness(1.0);
  const auto drive = [&](int rank, double seconds) {
    const auto until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    Status s;
    while (s.is_ok() && Clock::now() < until) s = meshes[static_cast<size_t>(rank)]->progress(5);
    return s;
  };
  // 3 s (3x the limit) of nothing but driving: every rank stays alive.
  const std::vector<Status> quiet = test::on_thread_ranks<Status>(size, [&](int r) { return drive(r, 3.0); });
  for (const Status& s : quiet) REQUIRE(s.is_ok());
  // Rank 2 stops: ranks 0 and 1 name it within the limit and a little.
  const auto stopped_at = Clock::now();
  const std::vector<Status> after =
      test::on_thread_ranks<Status>(size, [&](int r) { return r == 2 ? Status::ok() : drive(r, 6.0); });
  const double took = std::chrono::duration<double>(Clock::now() - stopped_at).count();
  CHECK(took < 3.0);
  for (int r = 0; r < 2; ++r) {
    REQUIRE_FALSE(after[static_cast<size_t>(r)].is_ok());
    CHECK_THAT(after[static_cast<size_t>(r)].message(), Catch::Contains("lost its connection to rank 2") &&
                                                            Catch::Contains("nothing arrived for 1 s") &&
                                                            Catch::Contains("CHORUS_HEARTBEAT_TIMEOUT_SECONDS=1"));
  }
}

// A rank that learns of a loss from another (kGone) names the lost rank
// with the reason the other saw: rank 1's limit is half rank 0's, so rank 0
// hears of rank 2's silence from rank 1 first (its heartbeats, every 1 s,
// keep it alive at rank 1).
TEST_CASE("A rank told of a loss names it with the teller's reason", "[tcp][mesh][liveness]") {
  const int size = 3;
  std::vector<std::unique_ptr<TcpMesh>> meshes = test::tcp_meshes(size);
  REQUIRE(meshes.size() == static_cast<size_t>(size));
  meshes[0]->watch_liveness(4.0);
  meshes[1]->watch_liveness(2.0);
  const std::vector<Status> after = test::on_thread_ranks<Status>(size, [&](int r) {
    if (r == 2) return Status::ok();  // stopped: its connections stay open
    const auto until = Clock::now() + std::chrono::seconds(8);
    Status s;
    while (s.is_ok() && Clock::now() < until) s = meshes[static_cast<size_t>(r)]->progress(5);
    return s;
  });
  for (int r = 0; r < 2; ++r) {
    REQUIRE_FALSE(after[static_cast<size_t>(r)].is_ok());
    CHECK_THAT(
        after[static_cast<size_t>(r)].message(),
        Catch::StartsWith("rank " + std::to_string(r) + " lost its connection to rank 2: nothing arrived for 2 s") &&
            Catch::Contains("CHORUS_HEARTBEAT_TIMEOUT_SECONDS=2"));
  }
}
