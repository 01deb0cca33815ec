// Start-up corner cases of the TCP transport: which address rank 0 records
// for a rank that reached it through loopback, a connect bounded by its
// deadline, a socket joined to itself, and a host segment that a failing
// communicator must not leak.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "comm/shm/host_shared_memory.h"
#include "net/tcp_socket.h"
#include "rendezvous/tcp_peer_address.h"

using namespace chorus;
using namespace chorus::detail;

TEST_CASE("Loopback addresses are told from others", "[tcp][address]") {
  CHECK(is_loopback_address("127.0.0.1"));
  CHECK(is_loopback_address("127.0.1.1"));
  CHECK(is_loopback_address("::1"));
  CHECK(is_loopback_address("::ffff:127.0.1.1"));
  CHECK(is_loopback_address("localhost"));
  CHECK_FALSE(is_loopback_address("10.0.0.2"));
  CHECK_FALSE(is_loopback_address("::ffff:10.0.0.2"));
  CHECK_FALSE(is_loopback_address("fe80::1"));
  CHECK_FALSE(is_loopback_address("node7"));  // a name: resolves differently on each host
}

TEST_CASE("A rank that reached rank 0 through loopback is recorded where the others reach rank 0", "[tcp][address]") {
  std::string out;
  SECTION("a rank on another host: the address it came from") {
    REQUIRE(address_to_record(2, "10.0.0.2", "b", "a", "node0", &out).is_ok());
    CHECK(out == "10.0.0.2");
  }
  SECTION("a rank on rank 0's host through 127.0.1.1 (a host name in Debian's /etc/hosts): the master address") {
    REQUIRE(address_to_record(1, "127.0.1.1", "a", "a", "node0", &out).is_ok());
    CHECK(out == "node0");
    REQUIRE(address_to_record(1, "::1", "a", "a", "10.0.0.1", &out).is_ok());
    CHECK(out == "10.0.0.1");
  }
  SECTION("a job on one machine (the master address is loopback): the address it came from") {
    REQUIRE(address_to_record(3, "127.0.0.1", "host3", "host0", "127.0.0.1", &out).is_ok());
    CHECK(out == "127.0.0.1");
  }
  SECTION("loopback from another host (a tunnel): an error naming the rank") {
    Status s = address_to_record(3, "127.0.0.1", "b", "a", "node0", &out);
    REQUIRE_FALSE(s.is_ok());
    CHECK_THAT(s.message(), Catch::Contains("rank 3") && Catch::Contains("loopback") && Catch::Contains("node0"));
  }
}

TEST_CASE("A connect that gets no answer ends at its deadline", "[tcp][connect]") {
  // A listener that never accepts, its queue full: Linux drops further SYNs
  // unanswered, as a firewall would; a blocking connect would wait minutes.
  Socket listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener.fd(), 0) == 0);
  socklen_t len = sizeof addr;
  getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  std::vector<Socket> fillers(3);
  for (Socket& f : fillers) connect_to("127.0.0.1", port, Clock::now() + std::chrono::milliseconds(200), &f);
  Socket s;
  const auto start = Clock::now();
  Status st = connect_to("127.0.0.1", port, Clock::now() + std::chrono::milliseconds(700), &s);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK_FALSE(st.is_ok());
  CHECK(took < 3.0);
}

TEST_CASE("A socket the kernel joined to itself is told from a real connection", "[tcp][connect]") {
  // What connect_to meets when nobody listens yet and the kernel picks, as
  // this socket's own port, the very port it dials: TCP's simultaneous open.
  Socket self(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(self.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  getsockname(self.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  REQUIRE(::connect(self.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  CHECK(connected_to_itself(self.fd()));

  Socket listener;
  int port = 0;
  REQUIRE(listen_on("127.0.0.1", 0, &listener, &port).is_ok());
  Socket client;
  REQUIRE(connect_to("127.0.0.1", port, Clock::now() + std::chrono::seconds(2), &client).is_ok());
  CHECK_FALSE(connected_to_itself(client.fd()));
  CHECK_FALSE(connected_to_itself(listener.fd()));  // not connected at all
}

namespace {

// A communicator whose every collective fails (a peer lost during start-up).
class BrokenCommunicator final : public Communicator {
 public:
  Status allreduce(const void*, void*, int64_t, DataType, ReduceOp) override { return lost(); }
  Status broadcast(void*, int64_t, int) override { return lost(); }
  Status allgatherv(const void*, void*, const std::vector<int64_t>&, int64_t) override { return lost(); }
  Status alltoallv(const void*, const std::vector<int64_t>&, void*, const std::vector<int64_t>&, int64_t) override {
    return lost();
  }
  Status reducescatter(const void*, void*, const std::vector<int64_t>&, DataType, ReduceOp) override {
    return lost();
  }
  const char* name() const override { return "broken"; }

 private:
  static Status lost() { return Status::unknown_error("rank 1 is gone"); }
};

int segments_of_this_process() {
  const std::string prefix = "chorus." + std::to_string(getpid()) + ".";
  int n = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0 ? 1 : 0;
    closedir(d);
  }
  return n;
}

}  // namespace

TEST_CASE("Rank 0's host segment is removed when the communicator fails during start-up", "[tcp][shm]") {
  BrokenCommunicator comm;
  const int before = segments_of_this_process();
  std::unique_ptr<HostSharedMemory> shm;
  std::string why_not, arena_why_not;
  Status s = HostSharedMemory::create(comm, 0, 2, 1 << 16, 1 << 20, &shm, &why_not, &arena_why_not);
  CHECK_FALSE(s.is_ok());
  CHECK(shm == nullptr);
  CHECK(segments_of_this_process() == before);
}
