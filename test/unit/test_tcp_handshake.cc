// The proof that opens every TCP connection (net/tcp_handshake.h) and
// its acceptor (net/tcp_acceptor.h): the messages as pure functions, a
// replayed proof, strangers at a real listener (garbage, silence, a wrong
// secret, hundreds at once), a stranger claiming rank 1 before it, and
// where the secret comes from (rendezvous/tcp_secret.h).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "env_guard.h"
#include "net/tcp_acceptor.h"
#include "net/tcp_handshake.h"
#include "rendezvous/tcp_rendezvous.h"
#include "rendezvous/tcp_secret.h"
#include "tcp_job.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

HandshakeClaim claim_of(int from, int to) {
  return HandshakeClaim{HandshakePurpose::kMesh, 4, from, to, 0x1234, "job-a"};
}

Nonce nonce_of(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A connection to 127.0.0.1:`port` that then does nothing (a stranger).
Socket raw_connection(int port) {
  Socket s;
  REQUIRE(connect_to("127.0.0.1", port, Clock::now() + std::chrono::seconds(5), &s).is_ok());
  return s;
}

TcpAuth auth_with(const std::string& secret, double timeout = 3.0) {
  TcpAuth a;
  a.secret = secret;
  a.handshake_timeout_seconds = timeout;
  return a;
}

}  // namespace

TEST_CASE("A hello decodes to what was encoded; partial, foreign or overlong bytes do not", "[tcp][handshake]") {
  const HandshakeClaim c = claim_of(3, 1);
  const std::string hello = encode_hello(nonce_of(7), c);
  Nonce nc{};
  HandshakeClaim got;
  REQUIRE(decode_hello(hello, &nc, &got) == Decoded::kOk);
  REQUIRE(nc == nonce_of(7));
  REQUIRE((got.purpose == c.purpose && got.size == 4 && got.from == 3 && got.to == 1 && got.mesh_key == 0x1234));
  REQUIRE(got.job_id == "job-a");
  for (size_t n = 0; n < hello.size(); ++n) REQUIRE(decode_hello(hello.substr(0, n), &nc, &got) == Decoded::kNeedMore);
  REQUIRE(decode_hello(hello + "x", &nc, &got) == Decoded::kBad);
  REQUIRE(decode_hello("GET / HTTP/1.1\r\n", &nc, &got) == Decoded::kBad);
  std::string long_job = encode_hello(nc, HandshakeClaim{HandshakePurpose::kMesh, 2, 1, 0, 0, std::string(2000, 'j')});
  REQUIRE(decode_hello(long_job, &nc, &got) == Decoded::kBad);
}

TEST_CASE("A proof binds the key, the direction, both nonces and every field of the claim", "[tcp][handshake]") {
  const std::string key = handshake_key("s3cret");
  const Mac base = handshake_mac(key, 'C', nonce_of(1), nonce_of(2), claim_of(2, 0));
  REQUIRE(mac_matches(base, handshake_mac(key, 'C', nonce_of(1), nonce_of(2), claim_of(2, 0)).data()));
  std::vector<Mac> others = {
      handshake_mac(handshake_key("other"), 'C', nonce_of(1), nonce_of(2), claim_of(2, 0)),
      handshake_mac(handshake_key(""), 'C', nonce_of(1), nonce_of(2), claim_of(2, 0)),
      handshake_mac(key, 'S', nonce_of(1), nonce_of(2), claim_of(2, 0)),
      handshake_mac(key, 'C', nonce_of(9), nonce_of(2), claim_of(2, 0)),
      handshake_mac(key, 'C', nonce_of(1), nonce_of(9), claim_of(2, 0)),  // a replay meets a new challenge
      handshake_mac(key, 'C', nonce_of(1), nonce_of(2), claim_of(1, 0)),
      handshake_mac(key, 'C', nonce_of(1), nonce_of(2), claim_of(2, 1)),
  };
  HandshakeClaim c = claim_of(2, 0);
  c.size = 5;
  others.push_back(handshake_mac(key, 'C', nonce_of(1), nonce_of(2), c));
  c = claim_of(2, 0);
  c.mesh_key = 1;
  others.push_back(handshake_mac(key, 'C', nonce_of(1), nonce_of(2), c));
  c = claim_of(2, 0);
  c.job_id = "job-b";
  others.push_back(handshake_mac(key, 'C', nonce_of(1), nonce_of(2), c));
  for (const Mac& m : others) REQUIRE_FALSE(mac_matches(base, m.data()));
  Nonce a{}, b{};
  REQUIRE((fresh_nonce(&a).is_ok() && fresh_nonce(&b).is_ok()));
  REQUIRE(a != b);
}

TEST_CASE("A recorded connector's bytes replayed to the acceptor are refused", "[tcp][handshake]") {
  Socket listener;
  int port = 0;
  REQUIRE(listen_on("127.0.0.1", 0, &listener, &port).is_ok());
  const TcpAuth auth = auth_with("s3cret");
  const HandshakeClaim claim{HandshakePurpose::kRendezvous, 2, 1, 0, 0, "job"};
  // The recording: a real proof against one challenge.
  std::string recorded_hello, recorded_proof;
  {
    HandshakeAcceptor acceptor(listener, auth, HandshakePurpose::kRendezvous, 0, 0);
    bool accepted = false;
    std::thread real([&] {  // prove_connection's steps, recorded
      Socket s;
      Nonce nc{}, ns{};
      const Deadline d = Clock::now() + std::chrono::seconds(5);
      if (!connect_to("127.0.0.1", port, d, &s).is_ok() || !fresh_nonce(&nc).is_ok()) return;
      recorded_hello = encode_hello(nc, claim);
      uint8_t kind = 0;
      if (!send_exactly(s.fd(), recorded_hello.data(), recorded_hello.size(), d).is_ok()) return;
      if (!recv_exactly(s.fd(), &kind, 1, d).is_ok() || !recv_exactly(s.fd(), ns.data(), ns.size(), d).is_ok()) return;
      const Mac proof = handshake_mac(handshake_key("s3cret"), 'C', nc, ns, claim);
      recorded_proof.assign(reinterpret_cast<const char*>(proof.data()), proof.size());
      if (!send_exactly(s.fd(), proof.data(), proof.size(), d).is_ok()) return;
      accepted = recv_exactly(s.fd(), &kind, 1, d).is_ok() && kind == kAccepted;
    });
    ProvenConnection c;
    REQUIRE(acceptor.next(Clock::now() + std::chrono::seconds(5), &c).is_ok());
    real.join();
    REQUIRE(accepted);
  }
  // The replay: the same hello and proof on a new connection.
  HandshakeAcceptor acceptor(listener, auth, HandshakePurpose::kRendezvous, 0, 0);
  Socket replay = raw_connection(port);
  const Deadline d = Clock::now() + std::chrono::seconds(5);
  REQUIRE(send_exactly(replay.fd(), recorded_hello.data(), recorded_hello.size(), d).is_ok());
  ProvenConnection c;
  REQUIRE(acceptor.next(Clock::now() + std::chrono::milliseconds(300), &c).code() == StatusCode::kTimeout);
  REQUIRE(send_exactly(replay.fd(), recorded_proof.data(), recorded_proof.size(), d).is_ok());
  REQUIRE(acceptor.next(Clock::now() + std::chrono::milliseconds(300), &c).code() == StatusCode::kTimeout);
  REQUIRE(acceptor.refused() == 1);
  uint8_t reply[64];
  REQUIRE(recv_exactly(replay.fd(), reply, 1 + kNonceBytes, d).is_ok());  // the challenge
  REQUIRE(recv_exactly(replay.fd(), reply, 1, d).is_ok());
  REQUIRE(reply[0] == kRefused);
}

TEST_CASE("Strangers are closed, reported once per address, and hold up no member", "[tcp][handshake]") {
  Socket listener;
  int port = 0;
  REQUIRE(listen_on("127.0.0.1", 0, &listener, &port).is_ok());
  std::vector<std::string> reports;
  TcpAuth auth = auth_with("s3cret", 1.0);
  auth.report = [&](const std::string& m) { reports.push_back(m); };
  HandshakeAcceptor acceptor(listener, auth, HandshakePurpose::kRendezvous, 0, 0);
  std::vector<Socket> strangers;
  for (int i = 0; i < 200; ++i) strangers.push_back(raw_connection(port));  // silent
  Socket garbage = raw_connection(port);
  REQUIRE(send_exactly(garbage.fd(), "hello?\n", 7, Clock::now() + std::chrono::seconds(1)).is_ok());
  const HandshakeClaim rank1{HandshakePurpose::kRendezvous, 2, 1, 0, 0, "job"};
  // A stranger with another secret claims rank 1 first; then the real rank 1.
  std::string wrong_why, real_why;
  auto claim_rank1 = [&](const std::string& secret, std::string* why) {
    Socket s;
    if (!connect_to("127.0.0.1", port, Clock::now() + std::chrono::seconds(5), &s).is_ok()) return;
    bool refused = false;
    *why = prove_connection(s.fd(), handshake_key(secret), rank1, Clock::now() + std::chrono::seconds(5), &refused)
               .message();
  };
  std::thread wrong(claim_rank1, "guess", &wrong_why);
  ProvenConnection c;
  REQUIRE(acceptor.next(Clock::now() + std::chrono::milliseconds(500), &c).code() == StatusCode::kTimeout);
  wrong.join();
  const auto start = std::chrono::steady_clock::now();
  std::thread real(claim_rank1, "s3cret", &real_why);
  Status s = acceptor.next(Clock::now() + std::chrono::seconds(5), &c);
  const double took = seconds_since(start);
  real.join();
  REQUIRE(s.is_ok());
  REQUIRE(c.claim.from == 1);
  REQUIRE(real_why.empty());
  REQUIRE_THAT(wrong_why, Catch::Contains("refused this rank's proof"));
  REQUIRE(took < 1.0);
  // The silent ones are closed after the handshake timeout; never more than the cap at once.
  REQUIRE(acceptor.next(Clock::now() + std::chrono::milliseconds(1500), &c).code() == StatusCode::kTimeout);
  REQUIRE(acceptor.refused() == 202);
  REQUIRE(reports.size() == 1);  // every stranger came from 127.0.0.1
  REQUIRE_THAT(reports[0], Catch::Contains("refused a connection from 127.0.0.1"));
  char byte = 0;
  REQUIRE(::recv(strangers.back().fd(), &byte, 1, MSG_DONTWAIT) == 0);  // closed by the acceptor
}

TEST_CASE("A rendezvous with a secret completes past strangers; a rank with another secret is refused",
          "[tcp][handshake][rendezvous]") {
  const int port = test::free_tcp_port();
  std::vector<Status> outcomes(3);
  std::vector<std::thread> ranks;
  ranks.emplace_back([&] {
    TcpWorld world;
    outcomes[0] = tcp_rendezvous(test::tcp_spec(0, 2, port), 10.0, &world, auth_with("s3cret"));
  });
  // A process with another secret claims rank 1 first: refused at once.
  ranks.emplace_back([&] {
    TcpWorld world;
    outcomes[2] = tcp_rendezvous(test::tcp_spec(1, 2, port), 10.0, &world, auth_with("guess"));
  });
  ranks.back().join();
  ranks.pop_back();
  ranks.emplace_back([&] {
    TcpWorld world;
    outcomes[1] = tcp_rendezvous(test::tcp_spec(1, 2, port), 10.0, &world, auth_with("s3cret"));
  });
  for (std::thread& t : ranks) t.join();
  REQUIRE(outcomes[0].is_ok());
  REQUIRE(outcomes[1].is_ok());
  REQUIRE_THAT(outcomes[2].message(),
               Catch::Contains("rank 1 reached rank 0 at 127.0.0.1") && Catch::Contains("CHORUS_SECRET"));
}

TEST_CASE("A secret file that its group or others may read is refused, naming it and its mode", "[tcp][secret]") {
  char path[] = "/tmp/chorus_secret_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "abc\n", 4) == 4);
  close(fd);
  std::string secret;
  chmod(path, 0644);
  Status s = read_secret_file(path, &secret);
  REQUIRE_THAT(s.message(), Catch::Contains(std::string("CHORUS_SECRET_FILE '") + path + "'") &&
                                Catch::Contains("mode 0644") && Catch::Contains("chmod 600"));
  chmod(path, 0600);
  REQUIRE(read_secret_file(path, &secret).is_ok());
  REQUIRE(secret == "abc");
  unlink(path);
  REQUIRE_THAT(read_secret_file(path, &secret).message(), Catch::Contains("cannot be read"));
}

TEST_CASE("Without a secret rank 0 warns over other addresses than loopback; required, it is an error",
          "[tcp][secret]") {
  test::EnvGuard env;
  TcpJobSpec spec = test::tcp_spec(0, 2, 29500);
  TcpAuth auth;
  std::string warning;
  REQUIRE(tcp_auth_from_environment(spec, &auth, &warning).is_ok());
  REQUIRE(warning.empty());  // 127.0.0.1
  spec.master_addr = "192.0.2.1";
  REQUIRE(tcp_auth_from_environment(spec, &auth, &warning).is_ok());
  REQUIRE_THAT(warning,
               Catch::Contains("any process that reaches port 29500") && Catch::Contains("CHORUS_SECRET_FILE"));
  spec.rank = 1;
  REQUIRE(tcp_auth_from_environment(spec, &auth, &warning).is_ok());
  REQUIRE(warning.empty());  // rank 0 says it, once
  env.set("CHORUS_REQUIRE_SECRET", "1");
  REQUIRE_THAT(tcp_auth_from_environment(spec, &auth, &warning).message(),
               Catch::Contains("CHORUS_REQUIRE_SECRET is on but rank 1 has no secret"));
  env.set("CHORUS_SECRET", "abc");
  env.set("CHORUS_HANDSHAKE_TIMEOUT_SECONDS", "7");
  REQUIRE(tcp_auth_from_environment(spec, &auth, &warning).is_ok());
  REQUIRE((auth.secret == "abc" && auth.handshake_timeout_seconds == 7.0));
  REQUIRE(is_loopback_host("127.0.0.1"));
  REQUIRE(is_loopback_host("::1"));
  REQUIRE_FALSE(is_loopback_host("192.0.2.1"));
}
