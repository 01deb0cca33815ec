// The pure parts of the elastic rendezvous through etcd: the reading of
// etcd's answers, base64, the request bodies and the endpoints (rendezvous/
// etcd_json.h), the TLS files' checks (rendezvous/etcd_client.h), the keys'
// values (rendezvous/elastic_wire.h) and a new leader's adoption of the
// current world (rendezvous/elastic_world_formation.h). The rendezvous
// itself against a real etcd: test/elastic/elastic_etcd.sh and
// elastic_etcd_tls.sh.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/elastic_wire.h"
#include "rendezvous/elastic_world_formation.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_json.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

// A stand-in for one etcd member: every request on its port gets `status`
// and `body`, then the connection closes. Counts what it answered.
class FakeEtcd {
 public:
  FakeEtcd(int status, std::string body) : status_(status), body_(std::move(body)) {
    REQUIRE(listen_on("127.0.0.1", 0, &listener_, &port_).is_ok());
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeEtcd() {
    stop_ = true;
    thread_.join();
  }
  int port() const { return port_; }
  int answered() const { return answered_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      Socket c(::accept(listener_.fd(), nullptr, nullptr));
      std::string request;
      char buffer[4096];
      for (;;) {  // the headers, then Content-Length bytes
        const size_t end = request.find("\r\n\r\n");
        const size_t length = request.find("Content-Length: ");
        if (end != std::string::npos && length != std::string::npos &&
            request.size() >= end + 4 + std::stoul(request.substr(length + 16))) {
          break;
        }
        const ssize_t k = ::recv(c.fd(), buffer, sizeof buffer, 0);
        if (k <= 0) break;
        request.append(buffer, static_cast<size_t>(k));
      }
      const std::string answer = "HTTP/1.1 " + std::to_string(status_) +
                                 " X\r\nContent-Length: " + std::to_string(body_.size()) +
                                 "\r\nConnection: close\r\n\r\n" + body_;
      send_exactly(c.fd(), answer.data(), answer.size(), Clock::now() + std::chrono::seconds(2));
      ++answered_;
    }
  }

  const int status_;
  const std::string body_;
  Socket listener_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
};

Deadline soon() { return Clock::now() + std::chrono::seconds(2); }

}  // namespace

TEST_CASE("etcd's answers: key-values, revisions, leases, errors", "[etcd]") {
  EtcdAnswer a;
  const std::string range =
      R"({"header":{"cluster_id":"3249","revision":"12"},"kvs":[{"key":"Zm9v","create_revision":"5",)"
      R"("mod_revision":"7","version":"1","value":"YmFy","lease":"694"},{"key":"YQ==","mod_revision":8}],)"
      R"("count":"2","more":false})";
  REQUIRE(read_etcd_answer(range, &a).is_ok());
  CHECK(a.revision == 12);
  REQUIRE(a.kvs.size() == 2);
  CHECK(a.kvs[0].key == "foo");
  CHECK(a.kvs[0].value == "bar");
  CHECK(a.kvs[0].create_revision == 5);
  CHECK(a.kvs[0].mod_revision == 7);
  CHECK(a.kvs[0].lease == 694);
  CHECK(a.kvs[1].key == "a");
  CHECK(a.kvs[1].lease == 0);  // no lease: the field is left out
}

TEST_CASE("etcd's answers: what each request gets back", "[etcd]") {
  EtcdAnswer a;
  REQUIRE(read_etcd_answer(R"({"header":{"revision":"3"}})", &a).is_ok());  // no keys: etcd leaves the list out
  CHECK(a.kvs.empty());
  CHECK(a.revision == 3);
  REQUIRE(read_etcd_answer(R"({"header":{},"kvs":[{"key":"YQ==","mod_revision":8,"lease":"7587"}]})", &a).is_ok());
  REQUIRE(a.kvs.size() == 1);
  CHECK(a.kvs[0].key == "a");
  CHECK(a.kvs[0].value.empty());      // etcd leaves an empty value out
  CHECK(a.kvs[0].mod_revision == 8);  // a JSON number is taken too
  CHECK(a.kvs[0].lease == 7587);
  REQUIRE(read_etcd_answer(R"({"header":{"revision":"9"},"ID":"7587","TTL":"5"})", &a).is_ok());  // a grant
  CHECK(a.lease == 7587);
  CHECK(a.ttl == 5);
  // A keepalive, streamed: one result per request, TTL left out when the lease is gone.
  REQUIRE(
      read_etcd_answer("{\"result\":{\"header\":{\"revision\":\"4\"},\"ID\":\"7587\",\"TTL\":\"5\"}}\n", &a).is_ok());
  CHECK(a.ttl == 5);
  CHECK(a.revision == 4);
  REQUIRE(read_etcd_answer(R"({"result":{"header":{"revision":"4"},"ID":"7587"}})", &a).is_ok());
  CHECK(a.ttl == 0);
  REQUIRE(read_etcd_answer(R"({"header":{"revision":"5"},"succeeded":true,"responses":[{}]})", &a).is_ok());
  CHECK(a.succeeded);
  REQUIRE(read_etcd_answer(R"({"header":{},"token":"abc.17"})", &a).is_ok());
  CHECK(a.token == "abc.17");
  // Errors: 3.4's gateway says "error", later ones "message".
  REQUIRE(read_etcd_answer(R"({"error":"etcdserver: invalid auth token","code":16})", &a).is_ok());
  CHECK(a.error == "etcdserver: invalid auth token");
  REQUIRE(read_etcd_answer(R"({"code":5,"message":"etcdserver: requested lease not found"})", &a).is_ok());
  CHECK(a.error == "etcdserver: requested lease not found");
}

TEST_CASE("etcd's answers that are refused name what is wrong", "[etcd]") {
  EtcdAnswer a;
  const std::pair<const char*, const char*> bad[] = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"{} x", "not JSON"},
      {"[1]", "not a JSON object"},
      {"\"text\"", "not a JSON object"},
      {R"({"kvs":{}})", "kvs is not a list"},
      {R"({"kvs":[1]})", "kvs[0] is not an object"},
      {R"({"kvs":[{"key":"Zm9"}]})", "kvs[0].key is not base64"},
      {R"({"kvs":[{"key":"Zm9v"},{"key":"Zm9v","value":3}]})", "kvs[1].value is not a string"},
      {R"({"kvs":[{"key":"Zm9v","mod_revision":"7x"}]})", "kvs[0].mod_revision is not a whole number"},
      {R"({"kvs":[{"key":"Zm9v","lease":1.5}]})", "kvs[0].lease is not a whole number"},
      {R"({"header":{"revision":"+3"}})", "header.revision is not a whole number"},
      {R"({"ID":"99999999999999999999"})", "ID is not a whole number"},
      {R"({"ID":18446744073709551615})", "ID is not a whole number"},
      {R"({"result":{"TTL":[]}})", "result.TTL is not a whole number"},
      {R"({"succeeded":"yes"})", "succeeded is not true/false"},
      {R"({"token":7})", "token is not a string"},
  };
  for (const auto& [body, why] : bad) {
    INFO(body);
    const Status s = read_etcd_answer(body, &a);
    CHECK_FALSE(s.is_ok());
    CHECK_THAT(s.message(), Catch::Contains(why));
    CHECK(a.kvs.empty());
  }
  REQUIRE(read_etcd_answer(R"({"ID":"-1","TTL":-1})", &a).is_ok());  // a negative TTL: the lease is unknown
  CHECK(a.lease == -1);
  CHECK(a.ttl == -1);
}

TEST_CASE("base64 is OpenSSL's, padding and binary included", "[etcd]") {
  for (const std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                              std::string("/chorus/job/members/h:1:ab"), std::string("\0\xff\x10", 3)}) {
    std::string back;
    REQUIRE(base64_decode(base64_encode(s), &back));
    CHECK(back == s);
  }
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("fo") == "Zm8=");
  std::string out;
  CHECK_FALSE(base64_decode("Zm9", &out));     // not a multiple of 4
  CHECK_FALSE(base64_decode("Zm 9v", &out));   // a blank
  CHECK_FALSE(base64_decode("Zm9v\n", &out));  // EVP_DecodeBlock would skip it
  CHECK_FALSE(base64_decode("====", &out));    // padding only at the end, at most two
  CHECK_FALSE(base64_decode("Zg=a", &out));
}

TEST_CASE("etcd endpoints: one or several, http and https", "[etcd]") {
  std::vector<EtcdEndpoint> e;
  REQUIRE(parse_etcd_endpoints("etcd.example", &e).is_ok());
  REQUIRE(e.size() == 1);
  CHECK(e[0].host == "etcd.example");
  CHECK(e[0].port == 2379);
  CHECK_FALSE(e[0].tls);
  CHECK(e[0].url() == "http://etcd.example:2379");
  REQUIRE(parse_etcd_endpoints("http://10.0.0.5:12379/", &e).is_ok());
  CHECK(e[0].text() == "10.0.0.5:12379");
  REQUIRE(parse_etcd_endpoints("[::1]:2380", &e).is_ok());
  CHECK(e[0].host == "::1");
  CHECK(e[0].text() == "[::1]:2380");
  REQUIRE(parse_etcd_endpoints("HTTPS://a:1, http://b:2 ,c,https://[::1]", &e).is_ok());
  REQUIRE(e.size() == 4);
  CHECK(e[0].tls);
  CHECK(e[0].text() == "https://a:1");
  CHECK(e[0].url() == "https://a:1");
  CHECK_FALSE(e[1].tls);
  CHECK(e[1].url() == "http://b:2");
  CHECK(e[2].host == "c");
  CHECK(e[2].port == 2379);
  CHECK(e[3].url() == "https://[::1]:2379");
  CHECK(etcd_endpoints_text(e) == "https://a:1, b:2, c:2379, https://[::1]:2379");
}

TEST_CASE("bad etcd endpoints: the variable and the entry named", "[etcd]") {
  std::vector<EtcdEndpoint> e;
  const std::pair<const char*, const char*> bad[] = {
      {"", "'': an empty endpoint"},
      {":2379", "expected host:port"},
      {"host:0", "'host:0': the port is not 1..65535"},
      {"host:70000", "the port is not 1..65535"},
      {"host:x", "the port is not 1..65535"},
      {"host:+1", "the port is not 1..65535"},
      {"::1:2379", "[address]:port"},
      {"[::1", "without its ']'"},
      {"ftp://h:1", "neither http:// nor https://"},
      {"a:1,b:x", "'b:x' (entry 2): the port is not 1..65535"},
      {"a:1,,b:2", "'' (entry 2): an empty endpoint"},
      {"a:1,", "(entry 2): an empty endpoint"},
      {"a:1, http://a:1", "'http://a:1' (entry 2): given twice"},
      {"a:1,https://b c:2", "(entry 2): expected host:port"},
  };
  for (const auto& [text, why] : bad) {
    INFO(text);
    const Status s = parse_etcd_endpoints(text, &e);
    CHECK_FALSE(s.is_ok());
    CHECK_THAT(s.message(), Catch::Contains("CHORUS_RDZV_ENDPOINT='" + std::string(text) + "'"));
    CHECK_THAT(s.message(), Catch::Contains(why));
  }
}

TEST_CASE("the TLS variables' errors name the variable and the file", "[etcd]") {
  std::vector<EtcdEndpoint> plain, secure;
  REQUIRE(parse_etcd_endpoints("a:1,b:2", &plain).is_ok());
  REQUIRE(parse_etcd_endpoints("a:1,https://b:2", &secure).is_ok());
  CHECK(check_etcd_tls({}, plain).is_ok());
  CHECK(check_etcd_tls({}, secure).is_ok());  // the system's CAs, no client certificate
  CHECK_THAT(
      check_etcd_tls({"/etc/ca.pem", "", ""}, plain).message(),
      Catch::Contains("CHORUS_RDZV_CA_FILE=/etc/ca.pem: set, but no endpoint in CHORUS_RDZV_ENDPOINT is https://"));
  CHECK_THAT(check_etcd_tls({"", "c.pem", ""}, secure).message(),
             Catch::Contains("CHORUS_RDZV_CERT_FILE is set but CHORUS_RDZV_KEY_FILE"));
  CHECK_THAT(check_etcd_tls({"", "", "k.pem"}, secure).message(),
             Catch::Contains("CHORUS_RDZV_KEY_FILE is set but CHORUS_RDZV_CERT_FILE"));
  CHECK_THAT(check_etcd_tls({"/nonexistent/ca.pem", "", ""}, secure).message(),
             Catch::Contains("CHORUS_RDZV_CA_FILE=/nonexistent/ca.pem: cannot read it"));
  CHECK_THAT(check_etcd_tls({"/dev/null", "", ""}, secure).message(),
             Catch::Contains("CHORUS_RDZV_CA_FILE=/dev/null: no PEM certificate in it"));
  CHECK_THAT(check_etcd_tls({"", "/dev/null", "/dev/null"}, secure).message(),
             Catch::Contains("CHORUS_RDZV_CERT_FILE=/dev/null: no PEM certificate in it"));
}

TEST_CASE("etcd's request bodies", "[etcd]") {
  CHECK(etcd_prefix_end("/chorus/j/members/") == "/chorus/j/members0");
  CHECK(etcd_prefix_end("a\xff") == "b");
  CHECK(etcd_prefix_end("\xff") == std::string(1, '\0'));
  // nlohmann/json writes an object's names in order.
  CHECK(etcd_txn_body({"leader", true, ""}, {{false, "leader", "me", 77}}) ==
        R"({"compare":[{"create_revision":"0","key":"bGVhZGVy","target":"CREATE"}],)"
        R"("success":[{"request_put":{"key":"bGVhZGVy","lease":"77","value":"bWU="}}]})");
  CHECK(etcd_txn_body({"leader", false, "me"}, {{false, "w", "x", 0}, {true, "f", "", 0}}) ==
        R"({"compare":[{"key":"bGVhZGVy","target":"VALUE","value":"bWU="}],)"
        R"("success":[{"request_put":{"key":"dw==","value":"eA=="}},{"request_delete_range":{"key":"Zg=="}}]})");
  CHECK(etcd_put_body("k", "v", 0) == R"({"key":"aw==","value":"dg=="})");
  CHECK(etcd_put_body("k", "", 5) == R"({"key":"aw==","lease":"5","value":""})");
  CHECK(etcd_range_body("k", "") == R"({"key":"aw=="})");
  CHECK(etcd_range_body("a/", etcd_prefix_end("a/")) == R"({"key":"YS8=","range_end":"YTA="})");
  CHECK(etcd_delete_body("k") == R"({"key":"aw=="})");
  CHECK(etcd_grant_body(5) == R"({"TTL":"5"})");
  CHECK(etcd_lease_body(7587) == R"({"ID":"7587"})");
  // A password with quotes, a backslash, a control character.
  CHECK(etcd_authenticate_body("root", "p\"w\\\n\x01") == R"({"name":"root","password":"p\"w\\\n\u0001"})");
}

TEST_CASE("the values of the job's keys in etcd round-trip", "[etcd]") {
  EtcdMemberValue m{{"host-a:4242:0a1b2c3d", "host-a/boot", 40123}, "10.0.0.7", 3}, back;
  REQUIRE(decode_etcd_member(encode_etcd_member(m), &back).is_ok());
  CHECK(back.join.member_id == m.join.member_id);
  CHECK(back.join.host_id == "host-a/boot");
  CHECK(back.join.port == 40123);
  CHECK(back.address == "10.0.0.7");
  CHECK(back.after == 3);
  for (const char* bad : {"", "join\nx\nh\n1", "join\nx\nh\n1\naddr", "join\nx\nh\n1\n\n2", "join\nx\nh\n1\na\n-1",
                          "hosts\n1\n1\na\n2"}) {
    INFO(bad);
    CHECK_FALSE(decode_etcd_member(bad, &back).is_ok());
  }

  ElasticWorld w;
  w.version = 4;
  w.rank = 1;  // not stored: every member finds its rank among the ids
  w.key = 0x0123456789abcdefull;
  w.hosts_generation = 2;
  w.job_id = "job#4";
  w.peers = {{"a", "10.0.0.1", 1000}, {"b", "10.0.0.2", 2000}};
  ElasticWorld wb;
  std::vector<std::string> ids;
  REQUIRE(decode_etcd_world(encode_etcd_world(w, {"m1", "m0"}), &wb, &ids).is_ok());
  CHECK(ids == std::vector<std::string>{"m1", "m0"});
  CHECK(wb.version == 4);
  CHECK(wb.key == w.key);
  CHECK(wb.hosts_generation == 2);
  CHECK(wb.job_id == "job#4");
  REQUIRE(wb.peers.size() == 2);
  CHECK(wb.peers[1].address == "10.0.0.2");
  CHECK_FALSE(decode_etcd_world(encode_etcd_world(w, {"only-one"}), &wb, &ids).is_ok());
  CHECK_FALSE(decode_etcd_world(encode_world(w), &wb, &ids).is_ok());
  CHECK_FALSE(decode_etcd_world("members\tx", &wb, &ids).is_ok());
}

TEST_CASE("a new leader adopts the current world; the failure names the variables", "[etcd]") {
  FormationSettings settings{2, 8, 10.0, 5.0};
  settings.min_np_name = "CHORUS_ELASTIC_MIN_NP";
  settings.timeout_name = "CHORUS_ELASTIC_TIMEOUT";
  WorldFormation f(settings);
  f.adopt(7, {"b", "a", "c"});
  CHECK(f.worlds_formed() == 7);
  CHECK(f.is_member("a"));
  // "c" is gone; "a" and "b" ask again: the world keeps their order.
  f.gone("c");
  f.joined("a", 0.0);
  CHECK(f.step(0.1).world.empty());  // "b" is still in the old world
  f.joined("b", 0.2);
  WorldFormation::Step s = f.step(0.3);
  CHECK(s.world == std::vector<std::string>{"b", "a"});
  CHECK(f.worlds_formed() == 8);

  f.gone("b");
  f.joined("a", 1.0);
  CHECK(f.step(1.0).failure.empty());
  s = f.step(6.5);
  CHECK_THAT(s.failure, Catch::Contains("(CHORUS_ELASTIC_MIN_NP)"));
  CHECK_THAT(s.failure, Catch::Contains("(CHORUS_ELASTIC_TIMEOUT)"));
}

TEST_CASE("the etcd client moves to the next endpoint and names every one tried", "[etcd]") {
  FakeEtcd leaderless(503, R"({"error":"etcdserver: no leader","code":14})");
  FakeEtcd healthy(200, R"({"header":{"revision":"7"}})");
  EtcdConnection c;
  const std::string a = "127.0.0.1:" + std::to_string(leaderless.port());
  const std::string b = "127.0.0.1:" + std::to_string(healthy.port());
  REQUIRE(parse_etcd_endpoints(a + "," + b, &c.endpoints).is_ok());
  EtcdClient client(c);
  int64_t revision = 0;
  REQUIRE(client.put("k", "v", 0, soon(), &revision).is_ok());
  CHECK(revision == 7);
  CHECK(leaderless.answered() == 1);
  REQUIRE(client.put("k", "v", 0, soon(), &revision).is_ok());  // the endpoint that answered, first
  CHECK(leaderless.answered() == 1);
  CHECK(healthy.answered() == 2);

  // Nobody answers: a timeout (etcd may be starting), every endpoint named with its reason.
  EtcdConnection none;
  FakeEtcd refusing(401, R"({"error":"etcdserver: user name is empty","code":16})");
  Socket closed;
  int free_port = 0;
  REQUIRE(listen_on("127.0.0.1", 0, &closed, &free_port).is_ok());
  closed.reset();  // nothing listens there now
  const std::string gone = "127.0.0.1:" + std::to_string(free_port);
  REQUIRE(parse_etcd_endpoints(gone + ",http://" + a, &none.endpoints).is_ok());
  EtcdClient nowhere(none);
  Status s = nowhere.put("k", "v", 0, soon());
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Catch::StartsWith("could not reach etcd at any of " + gone + ", " + a +
                                            " (CHORUS_RDZV_ENDPOINT): " + gone + ": "));
  CHECK_THAT(s.message(), Catch::Contains("; " + a + ": HTTP 503 etcdserver: no leader"));
  // An answer that is an error (not a 5xx) is etcd's refusal, naming the variables it concerns.
  REQUIRE(parse_etcd_endpoints("127.0.0.1:" + std::to_string(refusing.port()), &none.endpoints).is_ok());
  EtcdClient refused(none);
  s = refused.put("k", "v", 0, soon());
  CHECK(s.code() == StatusCode::kUnknownError);
  CHECK_THAT(s.message(), Catch::Contains("refused /v3/kv/put: etcdserver: user name is empty (CHORUS_RDZV_USER, "
                                          "CHORUS_RDZV_PASSWORD)"));
}
