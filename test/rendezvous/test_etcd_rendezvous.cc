// The pure parts of the elastic rendezvous through etcd: the JSON reader
// and base64 (rendezvous/etcd_json.h), etcd's request bodies, answers and
// HTTP responses (rendezvous/etcd_client.h), the keys' values (rendezvous/
// elastic_wire.h) and a new leader's adoption of the current world
// (rendezvous/elastic_world_formation.h). The rendezvous itself against a
// real etcd: test/elastic/elastic_etcd.sh.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rendezvous/elastic_wire.h"
#include "rendezvous/elastic_world_formation.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_json.h"

using namespace chorus;
using namespace chorus::detail;

TEST_CASE("the JSON reader reads etcd's answers", "[etcd]") {
  JsonValue v;
  const std::string range =
      R"({"header":{"cluster_id":"3249","revision":"12"},"kvs":[{"key":"Zm9v","create_revision":"5",)"
      R"("mod_revision":"7","version":"1","value":"YmFy"}],"count":"1","more":false,"n":-3.5e2,"z":null})";
  REQUIRE(parse_json(range, &v).is_ok());
  CHECK(JsonValue::as_int(v.get("header")->get("revision")) == 12);
  CHECK(JsonValue::as_int(v.get("count")) == 1);
  CHECK(v.get("more")->kind == JsonValue::Kind::kBool);
  CHECK(v.get("n")->text == "-3.5e2");
  CHECK(v.get("z")->kind == JsonValue::Kind::kNull);
  CHECK(v.get("absent") == nullptr);
  CHECK(JsonValue::as_int(v.get("absent"), 42) == 42);
  CHECK(JsonValue::as_int(v.get("header")) == 0);  // not a number
  std::vector<EtcdKeyValue> kvs;
  REQUIRE(etcd_key_values(v, &kvs).is_ok());
  REQUIRE(kvs.size() == 1);
  CHECK(kvs[0].key == "foo");
  CHECK(kvs[0].value == "bar");
  CHECK(kvs[0].create_revision == 5);
  CHECK(kvs[0].mod_revision == 7);

  REQUIRE(parse_json(R"({"header":{"revision":"3"}})", &v).is_ok());  // no keys: etcd leaves the list out
  REQUIRE(etcd_key_values(v, &kvs).is_ok());
  CHECK(kvs.empty());
}

TEST_CASE("the JSON reader's escapes and refusals", "[etcd]") {
  JsonValue v;
  REQUIRE(parse_json(R"( ["a\"b\\c\/d\n", "\u00e9\u20ac", "\ud83d\ude00", [], {}] )", &v).is_ok());
  REQUIRE(v.items.size() == 5);
  CHECK(v.items[0].text == "a\"b\\c/d\n");
  CHECK(v.items[1].text == "\xC3\xA9\xE2\x82\xAC");
  CHECK(v.items[2].text == "\xF0\x9F\x98\x80");
  CHECK(v.items[3].kind == JsonValue::Kind::kArray);
  CHECK(v.items[4].kind == JsonValue::Kind::kObject);
  for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "\"open", "tru", "{} x", "\"\\ud83d\"", "\"\\x\"",
                          "\"a\tb\"", "{1:2}"}) {
    INFO(bad);
    CHECK_FALSE(parse_json(bad, &v).is_ok());
  }
  CHECK_THAT(parse_json("[1] 2", &v).message(), Catch::Contains("at byte 4"));
  CHECK_THAT(parse_json(std::string(100, '[') + std::string(100, ']'), &v).message(), Catch::Contains("too deep"));
  CHECK(json_quote("a\"b\\c\n\x01") == R"("a\"b\\c\u000a\u0001")");
  REQUIRE(parse_json(json_quote("pass\"word\\\n"), &v).is_ok());
  CHECK(v.text == "pass\"word\\\n");
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
}

TEST_CASE("etcd endpoints and the errors that name the variable", "[etcd]") {
  EtcdEndpoint e;
  REQUIRE(parse_etcd_endpoint("etcd.example", &e).is_ok());
  CHECK(e.host == "etcd.example");
  CHECK(e.port == 2379);
  REQUIRE(parse_etcd_endpoint("http://10.0.0.5:12379/", &e).is_ok());
  CHECK(e.host == "10.0.0.5");
  CHECK(e.port == 12379);
  CHECK(e.text() == "10.0.0.5:12379");
  REQUIRE(parse_etcd_endpoint("[::1]:2380", &e).is_ok());
  CHECK(e.host == "::1");
  CHECK(e.text() == "[::1]:2380");
  for (const char* bad : {"", ":2379", "host:0", "host:70000", "host:x", "::1:2379", "[::1", "a,b:1"}) {
    INFO(bad);
    const Status s = parse_etcd_endpoint(bad, &e);
    CHECK_FALSE(s.is_ok());
    CHECK_THAT(s.message(), Catch::Contains("CHORUS_RDZV_ENDPOINT"));
  }
  CHECK_THAT(parse_etcd_endpoint("https://h:2379", &e).message(), Catch::Contains("TLS"));
}

TEST_CASE("etcd's request bodies", "[etcd]") {
  CHECK(etcd_prefix_end("/chorus/j/members/") == "/chorus/j/members0");
  CHECK(etcd_prefix_end("a\xff") == "b");
  const std::string lead = etcd_txn_body({"leader", true, ""}, {{false, "leader", "me", 77}});
  CHECK(lead == R"({"compare":[{"key":"bGVhZGVy","target":"CREATE","create_revision":"0"}],)"
                R"("success":[{"request_put":{"key":"bGVhZGVy","value":"bWU=","lease":"77"}}]})");
  const std::string guarded = etcd_txn_body({"leader", false, "me"}, {{false, "w", "x", 0}, {true, "f", "", 0}});
  CHECK(guarded ==
        R"({"compare":[{"key":"bGVhZGVy","target":"VALUE","value":"bWU="}],)"
        R"("success":[{"request_put":{"key":"dw==","value":"eA=="}},{"request_delete_range":{"key":"Zg=="}}]})");
  JsonValue v;
  CHECK(parse_json(lead, &v).is_ok());
  CHECK(parse_json(guarded, &v).is_ok());
}

TEST_CASE("HTTP responses: lengths, chunks and trailers", "[etcd]") {
  HttpResponse r;
  std::string why;
  const std::string sized = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
  for (size_t n = 0; n < sized.size(); ++n)
    CHECK(parse_http_response(sized.substr(0, n), &r, &why) == HttpParse::kNeedMore);
  REQUIRE(parse_http_response(sized, &r, &why) == HttpParse::kDone);
  CHECK(r.status == 200);
  CHECK(r.body == "{\"a\":1}");
  CHECK_FALSE(r.close);

  // etcd's error answers: chunked, with a gRPC trailer after the last chunk.
  const std::string chunked =
      "HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\nConnection: close\r\n\r\n"
      "6\r\n{\"a\":1\r\n1;ext=1\r\n}\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n";
  for (size_t n = 0; n < chunked.size(); ++n) {
    CHECK(parse_http_response(chunked.substr(0, n), &r, &why) == HttpParse::kNeedMore);
  }
  REQUIRE(parse_http_response(chunked, &r, &why) == HttpParse::kDone);
  CHECK(r.status == 404);
  CHECK(r.body == "{\"a\":1}");
  CHECK(r.close);

  CHECK(parse_http_response("SSH-2.0-OpenSSH\r\n\r\n", &r, &why) == HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", &r, &why) == HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", &r, &why) ==
        HttpParse::kBad);
  // What the fuzzer (test/fuzz/fuzz_etcd_response.cc) found taken: a status
  // that is not three digits, lengths with a sign or a 0x.
  CHECK(parse_http_response("HTTP/1.1 99999999999 OK\r\n\r\n", &r, &why) == HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 -20 OK\r\n\r\n", &r, &why) == HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 OK\r\n\r\n", &r, &why) == HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\na", &r, &why) == HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x1\r\na\r\n0\r\n\r\n", &r, &why) ==
        HttpParse::kBad);
  CHECK(parse_http_response("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", &r, &why) == HttpParse::kDone);
  CHECK(r.status == 200);
  CHECK(parse_http_response("HTTP/1.0 200 OK\r\n\r\nabc", &r, &why) == HttpParse::kNeedMore);  // until closed
  CHECK(r.until_close);
  CHECK(r.body == "abc");
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
