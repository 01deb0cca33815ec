// The TCP transport's small messages as pure functions: a rank's hello and
// rank 0's answer at the rendezvous of a job of fixed size (rendezvous/
// tcp_rendezvous_wire.h) and a failing rank's gone notice (comm/tcp/
// tcp_gone_notice.h); the regressions the fuzzers found (test/fuzz/).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "comm/tcp/tcp_gone_notice.h"
#include "rendezvous/tcp_rendezvous_wire.h"

using namespace chorus;
using namespace chorus::detail;

TEST_CASE("a rendezvous hello round-trips; garbage numbers are refused", "[tcp]") {
  RendezvousHello h{3, 4, 40123, "job#1", "hostA/boot"}, back;
  REQUIRE(decode_rendezvous_hello(encode_rendezvous_hello(h), &back).is_ok());
  CHECK(back.rank == 3);
  CHECK(back.size == 4);
  CHECK(back.port == 40123);
  CHECK(back.job_id == "job#1");
  CHECK(back.host_id == "hostA/boot");
  RendezvousHello empty{1, 2, 1, "", ""};
  REQUIRE(decode_rendezvous_hello(encode_rendezvous_hello(empty), &back).is_ok());
  CHECK(back.job_id.empty());
  CHECK(back.host_id.empty());
  // atoi took these: a port of 0 (or of 99999999999, undefined), a rank "x".
  CHECK_FALSE(decode_rendezvous_hello("chorus-tcp-1\n1\n2\n0\njob\nh", &back).is_ok());
  CHECK_FALSE(decode_rendezvous_hello("chorus-tcp-1\n1\n2\n99999999999\njob\nh", &back).is_ok());
  CHECK_FALSE(decode_rendezvous_hello("chorus-tcp-1\nx\n2\n80\njob\nh", &back).is_ok());
  CHECK_FALSE(decode_rendezvous_hello("chorus-tcp-1\n1\n2\n80", &back).is_ok());  // no job line
  CHECK_FALSE(decode_rendezvous_hello("chorus-tcp-0\n1\n2\n80\njob\nh", &back).is_ok());
}

TEST_CASE("rank 0's answer: a world of exactly the job's ranks, or its error", "[tcp]") {
  const std::vector<TcpPeerInfo> peers = {{"a", "10.0.0.1", 0}, {"b", "10.0.0.2", 40002}, {"a", "10.0.0.1", 65535}};
  uint64_t key = 0;
  std::vector<TcpPeerInfo> back;
  REQUIRE(decode_rendezvous_world(encode_rendezvous_world(peers, 0xfedcba9876543210ull), 3, &key, &back).is_ok());
  CHECK(key == 0xfedcba9876543210ull);
  REQUIRE(back.size() == 3);
  CHECK(back[1].host_id == "b");
  CHECK(back[1].address == "10.0.0.2");
  CHECK(back[2].port == 65535);

  Status s = decode_rendezvous_world(encode_rendezvous_world(peers, 1), 2, &key, &back);
  CHECK_THAT(s.message(), Catch::Contains("more than 2 ranks"));
  s = decode_rendezvous_world(encode_rendezvous_world(peers, 1), 4, &key, &back);
  CHECK_THAT(s.message(), Catch::Contains("fewer than 4 ranks"));
  s = decode_rendezvous_world("ok\n-1\na\tb\t0\n", 1, &key, &back);
  CHECK_THAT(s.message(), Catch::Contains("garbage"));
  s = decode_rendezvous_world("ok\n1\na\tb\t70000\n", 1, &key, &back);
  CHECK_THAT(s.message(), Catch::Contains("garbage"));

  s = decode_rendezvous_world(encode_rendezvous_error("rank 2 was claimed twice"), 3, &key, &back);
  CHECK(s.code() == StatusCode::kAborted);
  CHECK(s.message() == "rank 2 was claimed twice");
  // substr(6) of "error" threw std::out_of_range: an error with no text.
  s = decode_rendezvous_world("error", 3, &key, &back);
  CHECK(s.code() == StatusCode::kAborted);
  CHECK(s.message() == "no reason given");
}

TEST_CASE("a gone notice names ranks of the mesh once, never the reader", "[tcp]") {
  GoneNotice n = decode_gone_notice(encode_gone_notice({1, 3}, "rank 1 closed it"), 4, 0);
  CHECK(n.lost == std::vector<int>{1, 3});
  CHECK(n.why == "rank 1 closed it");
  n = decode_gone_notice(encode_gone_notice({2, -1, 9, 2, 0}, "x"), 4, 0);  // the reader, repeats, strangers
  CHECK(n.lost == std::vector<int>{2});
  n = decode_gone_notice(encode_gone_notice({1}, std::string(2000, 'w')), 2, 0);
  CHECK(n.why.size() == kLongestGoneReason);
  std::string past_its_end = encode_gone_notice({1}, "");
  past_its_end[0] = 9;  // a count of 9 ranks in 4 bytes
  n = decode_gone_notice(past_its_end, 4, 0);
  CHECK(n.lost.empty());
  CHECK(n.why.empty());
  CHECK(decode_gone_notice("ab", 4, 0).lost.empty());
}
