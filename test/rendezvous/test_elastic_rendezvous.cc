// Elastic jobs' rendezvous: the messages (rendezvous/elastic_wire.h), when a
// world forms and with whom (rendezvous/elastic_world_formation.h), and the
// server with real members over loopback (rendezvous/elastic_rendezvous.h,
// rendezvous/elastic_member.h): worlds formed, a member lost and the rest
// renumbered, a newcomer announced to the running world, too few members.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/elastic_member.h"
#include "rendezvous/elastic_rendezvous.h"
#include "rendezvous/elastic_wire.h"
#include "rendezvous/elastic_world_formation.h"

using namespace chorus;
using namespace chorus::detail;

TEST_CASE("elastic messages round-trip and garbage is named", "[elastic]") {
  ElasticJoin j{"hostb:1#7", "hostb/boot", 40123}, back;
  REQUIRE(decode_join(encode_join(j), &back).is_ok());
  CHECK(back.member_id == j.member_id);
  CHECK(back.host_id == j.host_id);
  CHECK(back.port == 40123);
  CHECK_FALSE(decode_join("join\nx\nh\n0", &back).is_ok());
  CHECK_FALSE(decode_join("hello", &back).is_ok());

  ElasticWorld w;
  w.version = 3;
  w.rank = 1;
  w.key = 0xfedcba9876543210ull;
  w.hosts_generation = 5;
  w.job_id = "job#3";
  w.peers = {{"a", "10.0.0.1", 1000}, {"b", "10.0.0.2", 2000}};
  ElasticMessage m;
  REQUIRE(decode_message(encode_world(w), &m).is_ok());
  REQUIRE(m.kind == ElasticMessage::Kind::kWorld);
  CHECK(m.world.version == 3);
  CHECK(m.world.rank == 1);
  CHECK(m.world.key == w.key);
  CHECK(m.world.hosts_generation == 5);
  CHECK(m.world.job_id == "job#3");
  REQUIRE(m.world.peers.size() == 2);
  CHECK(m.world.peers[1].address == "10.0.0.2");
  CHECK(m.world.peers[1].port == 2000);

  REQUIRE(decode_message(encode_hosts({4, kHostsAdded | kHostsRemoved}), &m).is_ok());
  CHECK(m.kind == ElasticMessage::Kind::kHosts);
  CHECK(m.hosts.generation == 4);
  CHECK(m.hosts.kinds == 3);
  REQUIRE(decode_message(encode_error("too few"), &m).is_ok());
  CHECK(m.error == "too few");
  const Status bad = decode_message("world\n1\n5\n7\n0\njob\na\tb\t1", &m);  // rank 5 of a world of 1
  CHECK_FALSE(bad.is_ok());
  CHECK_THAT(bad.message(), Catch::Contains("malformed world"));
  CHECK_FALSE(decode_message("what", &m).is_ok());
}

// What the fuzzer (test/fuzz/fuzz_elastic_wire.cc) found the decoders took:
// numbers that the consumers cannot mean, and values that lose a field
// when encoded again.
TEST_CASE("elastic messages refuse numbers their readers cannot mean", "[elastic]") {
  ElasticMessage m;
  CHECK_FALSE(decode_message("hosts\n0\n1", &m).is_ok());  // generations count from 1
  CHECK_FALSE(decode_message("hosts\n-3\n1", &m).is_ok());
  CHECK_FALSE(decode_message("hosts\n2\n0", &m).is_ok());  // kinds: added, removed or both
  CHECK_FALSE(decode_message("hosts\n2\n4", &m).is_ok());
  CHECK_FALSE(decode_message("hosts\n2\n 1", &m).is_ok());  // no spaces, no sign
  CHECK_FALSE(decode_message("hosts\n+2\n1", &m).is_ok());
  CHECK(decode_message("hosts\n2\n3", &m).is_ok());
  CHECK_FALSE(decode_message("world\n0\n0\n7\n0\njob\na\tb\t1", &m).is_ok());           // version 0
  CHECK_FALSE(decode_message("world\n1\n4294967296\n7\n0\njob\na\tb\t1", &m).is_ok());  // rank past int
  CHECK_FALSE(decode_message("world\n1\n0\n7\n-1\njob\na\tb\t1", &m).is_ok());          // generation < 0
  CHECK(decode_message("world\n1\n0\n7\n0\njob\na\tb\t1", &m).is_ok());
  ElasticJoin j;
  CHECK_FALSE(decode_join("join\nm\nh\n 80", &j).is_ok());
  ElasticWorld w;
  std::vector<std::string> ids;
  CHECK_FALSE(decode_etcd_world("members\t\nworld\n1\n0\n7\n0\njob\na\tb\t1", &w, &ids).is_ok());  // an empty id
  CHECK(decode_etcd_world("members\tm\nworld\n1\n0\n7\n0\njob\na\tb\t1", &w, &ids).is_ok());
}

TEST_CASE("a world forms once every member started asked, ranks kept", "[elastic]") {
  WorldFormation f({2, 8, 10.0, 60.0});
  for (const char* id : {"a", "b", "c"}) f.expect(id);
  f.joined("b", 0.0);
  f.joined("a", 0.1);
  CHECK(f.step(0.2).world.empty());  // c started, never asked yet
  f.joined("c", 0.3);
  WorldFormation::Step s = f.step(0.4);
  CHECK(s.world == std::vector<std::string>{"a", "b", "c"});  // newcomers as started (host order), not as they asked
  CHECK(f.worlds_formed() == 1);

  // "b" (rank 0) dies: the survivors keep their order, "a" becomes rank 0.
  f.gone("b");
  f.joined("c", 1.0);
  CHECK(f.step(1.1).world.empty());  // "a" is still in the old world
  f.joined("a", 1.2);
  s = f.step(1.3);
  CHECK(s.world == std::vector<std::string>{"a", "c"});
  CHECK(f.worlds_formed() == 2);
}

TEST_CASE("a newcomer interrupts the running world once, then joins it", "[elastic]") {
  WorldFormation f({1, 8, 10.0, 60.0});
  f.expect("a");
  f.expect("b");
  f.joined("a", 0);
  f.joined("b", 0);
  REQUIRE(f.step(0).world.size() == 2);
  f.expect("new");
  f.joined("new", 5.0);
  WorldFormation::Step s = f.step(5.0);
  CHECK(s.interrupt);
  CHECK(s.world.empty());
  CHECK_FALSE(f.step(5.1).interrupt);  // told once
  CHECK(f.step(100.0).late.empty());   // newcomers alone never make members late
  f.joined("b", 6.0);
  f.joined("a", 6.1);
  s = f.step(6.2);
  CHECK(s.world == std::vector<std::string>{"a", "b", "new"});
}

TEST_CASE("a member that stays in the old world is late after the grace", "[elastic]") {
  WorldFormation f({1, 8, 2.0, 60.0});
  for (const char* id : {"a", "b", "c"}) {
    f.expect(id);
    f.joined(id, 0);
  }
  REQUIRE(f.step(0).world.size() == 3);
  f.joined("a", 10.0);
  f.joined("c", 10.5);
  CHECK(f.step(11.0).late.empty());
  CHECK(f.step(12.0).late == std::vector<std::string>{"b"});
  f.gone("b");
  CHECK(f.step(12.1).world == std::vector<std::string>{"a", "c"});
}

TEST_CASE("fewer than min_np past the elastic timeout fails, naming both", "[elastic]") {
  WorldFormation f({3, 8, 10.0, 5.0});
  f.expect("a");
  f.expect("b");
  f.joined("a", 0);
  f.joined("b", 0);
  CHECK(f.step(1.0).failure.empty());
  const std::string why = f.step(6.5).failure;
  CHECK_THAT(why,
             Catch::Contains("only 2 workers") && Catch::Contains("--min-np") && Catch::Contains("--elastic-timeout"));
}

TEST_CASE("max_np caps the world and newcomers past it wait quietly", "[elastic]") {
  WorldFormation f({1, 2, 10.0, 60.0});
  for (const char* id : {"a", "b"}) {
    f.expect(id);
    f.joined(id, 0);
  }
  REQUIRE(f.step(0).world.size() == 2);
  f.expect("c");
  f.joined("c", 1);
  CHECK_FALSE(f.step(1).interrupt);
}

namespace {

// A rendezvous driven on its own thread until stopped.
struct RunningRendezvous {
  std::unique_ptr<ElasticRendezvous> server;
  std::atomic<bool> stop{false};
  std::thread loop;
  std::string failure;

  explicit RunningRendezvous(FormationSettings f) {
    ElasticRendezvousSettings s;
    s.formation = f;
    s.address = "127.0.0.1";
    s.job_id = "unit-job";
    s.auth.secret = "unit-secret";
    REQUIRE(ElasticRendezvous::start(std::move(s), &server).is_ok());
  }
  void run() {
    loop = std::thread([this] {
      while (!stop) {
        const ElasticRendezvous::Events e = server->run_for(0.01);
        if (!e.failure.empty()) failure = e.failure;
      }
    });
  }
  ~RunningRendezvous() {
    stop = true;
    if (loop.joinable()) loop.join();
  }
};

std::unique_ptr<ElasticMember> member(const RunningRendezvous& r, const std::string& id,
                                      const std::string& secret = "unit-secret") {
  TcpAuth auth;
  auth.secret = secret;
  return std::make_unique<ElasticMember>("127.0.0.1", r.server->port(), id, "unit-job", auth);
}

struct Joined {
  Status status;
  TcpWorld world;
  int rank = -1;
};

std::future<Joined> join_async(ElasticMember& m, double timeout = 10.0) {
  return std::async(std::launch::async, [&m, timeout] {
    Joined j;
    j.status = m.join(timeout, &j.world, &j.rank);
    return j;
  });
}

}  // namespace

TEST_CASE("members meet, one is lost, the rest meet again renumbered", "[elastic]") {
  RunningRendezvous r({2, 8, 10.0, 60.0});
  for (const char* id : {"m0", "m1", "m2"}) r.server->expect(id);
  r.run();
  auto m0 = member(r, "m0"), m1 = member(r, "m1"), m2 = member(r, "m2");
  auto f0 = join_async(*m0), f1 = join_async(*m1), f2 = join_async(*m2);
  Joined j0 = f0.get(), j1 = f1.get(), j2 = f2.get();
  REQUIRE(j0.status.is_ok());
  REQUIRE(j1.status.is_ok());
  REQUIRE(j2.status.is_ok());
  std::vector<int> ranks = {j0.rank, j1.rank, j2.rank};
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks == std::vector<int>{0, 1, 2});
  CHECK(j0.world.peers.size() == 3);
  CHECK(j0.world.key == j2.world.key);
  CHECK(j0.world.job_id == "unit-job#1");
  CHECK(j0.world.listener.valid());

  // The member at rank 0 goes; the two others ask again: ranks 0 and 1, in their old order.
  std::unique_ptr<ElasticMember>* gone = j0.rank == 0 ? &m0 : j1.rank == 0 ? &m1 : &m2;
  const std::string gone_id = (*gone)->member_id();
  gone->reset();  // its connection closes: the rendezvous forgets it
  std::vector<std::pair<ElasticMember*, int>> left;
  for (auto* p : {&m0, &m1, &m2}) {
    if (*p)
      left.emplace_back(p->get(), (*p)->member_id() == "m0" ? j0.rank : (*p)->member_id() == "m1" ? j1.rank : j2.rank);
  }
  auto g0 = join_async(*left[0].first), g1 = join_async(*left[1].first);
  Joined k0 = g0.get(), k1 = g1.get();
  REQUIRE(k0.status.is_ok());
  REQUIRE(k1.status.is_ok());
  CHECK(k0.world.peers.size() == 2);
  CHECK(k0.world.job_id == "unit-job#2");
  CHECK((k0.rank < k1.rank) == (left[0].second < left[1].second));
}

TEST_CASE("a newcomer: the running members hear the hosts changed", "[elastic]") {
  RunningRendezvous r({1, 8, 10.0, 60.0});
  r.server->expect("a");
  r.run();
  auto a = member(r, "a");
  Joined ja = join_async(*a).get();
  REQUIRE(ja.status.is_ok());
  CHECK(a->latest_notice().generation == 0);
  auto b = member(r, "b");
  auto fb = join_async(*b);
  ElasticHostsNotice n;
  for (int i = 0; i < 500 && n.generation == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = a->latest_notice();
  }
  CHECK(n.generation > 0);
  CHECK(n.kinds == kHostsAdded);
  Joined ja2 = join_async(*a).get();
  Joined jb = fb.get();
  REQUIRE(ja2.status.is_ok());
  REQUIRE(jb.status.is_ok());
  CHECK(ja2.rank == 0);  // the old member keeps rank 0: it holds the state
  CHECK(jb.rank == 1);
  CHECK(a->latest_notice().generation == 0);  // news before this world are not news to it
}

TEST_CASE("too few members: every waiting member gets the reason", "[elastic]") {
  RunningRendezvous r({3, 8, 10.0, 0.3});
  r.run();
  auto a = member(r, "a");
  Joined j = join_async(*a).get();
  CHECK(j.status.code() == StatusCode::kAborted);
  CHECK_THAT(j.status.message(), Catch::Contains("--min-np"));
}

TEST_CASE("a member with the wrong secret never gets a world", "[elastic]") {
  RunningRendezvous r({1, 8, 10.0, 60.0});
  r.run();
  auto stranger = member(r, "x", "wrong");
  Joined j = join_async(*stranger, 2.0).get();
  CHECK_FALSE(j.status.is_ok());
  CHECK_THAT(j.status.message(), Catch::Contains("could not reach the job's rendezvous"));
}

// Driven from the test's thread (the rendezvous is single-threaded) until
// `done` holds, collecting the members named to leave.
template <typename Done>
std::vector<std::string> pump(ElasticRendezvous& server, Done done) {
  std::vector<std::string> left;
  for (int i = 0; i < 1000 && !done(); ++i) {
    ElasticRendezvous::Events e = server.run_for(0.01);
    left.insert(left.end(), e.left.begin(), e.left.end());
  }
  return left;
}

template <typename T>
bool ready(std::future<T>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

TEST_CASE("a retired member leaves at its next ask; the others meet on", "[elastic]") {
  RunningRendezvous r({1, 8, 10.0, 60.0});
  for (const char* id : {"a", "b"}) r.server->expect(id);
  auto a = member(r, "a"), b = member(r, "b");
  auto fa = join_async(*a), fb = join_async(*b);
  pump(*r.server, [&] { return ready(fa) && ready(fb); });
  Joined ja = fa.get(), jb = fb.get();
  REQUIRE(ja.status.is_ok());
  REQUIRE(jb.status.is_ok());

  CHECK_FALSE(r.server->retire("nobody"));  // in no world: the launcher stops it at once
  REQUIRE(r.server->retire("b"));
  r.server->hosts_changed(kHostsRemoved);
  pump(*r.server, [&] { return a->latest_notice().generation > 0 && b->latest_notice().generation > 0; });
  CHECK(a->latest_notice().kinds == kHostsRemoved);
  CHECK(b->latest_notice().kinds == kHostsRemoved);

  // Both agreed at a commit and ask again: b is named to leave and never
  // answered; a meets alone, rank 0.
  auto fa2 = join_async(*a), fb2 = join_async(*b, 1.0);
  const std::vector<std::string> left = pump(*r.server, [&] { return ready(fa2); });
  Joined ja2 = fa2.get();
  REQUIRE(ja2.status.is_ok());
  CHECK(left == std::vector<std::string>{"b"});
  CHECK(ja2.rank == 0);
  CHECK(ja2.world.peers.size() == 1);
  CHECK(ja2.world.job_id == "unit-job#2");
  pump(*r.server, [&] { return ready(fb2); });
  CHECK_FALSE(fb2.get().status.is_ok());  // no world for it: the launcher ends it
}
