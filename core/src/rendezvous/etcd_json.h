#pragma once
// What travels to and from etcd's HTTP/JSON gateway (rendezvous/
// etcd_client.h), without the HTTP: the endpoints of CHORUS_RDZV_ENDPOINT,
// the requests' JSON bodies and the reading of etcd's answers. etcd v3
// speaks gRPC; its gateway takes and returns the same messages as JSON,
// keys and values in base64, int64 fields as strings.
//
// JSON through nlohmann/json (Debian's nlohmann-json3-dev, header only; it
// stays in etcd_json.cc, out of every header); base64 through OpenSSL
// (EVP_EncodeBlock/EVP_DecodeBlock), standard alphabet with padding, as
// the gateway writes it. Pure functions, no sockets: unit-tested (test/
// rendezvous/test_etcd_rendezvous.cc) and fuzzed (test/fuzz/
// fuzz_etcd_response.cc) without libcurl.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus::detail {

struct EtcdEndpoint {
  bool tls = false;  // https://
  std::string host;
  int port = 2379;
  std::string text() const;  // host:port ([host]:port for IPv6), https:// in front with TLS
  std::string url() const;   // http://host:port or https://host:port
};

/// CHORUS_RDZV_ENDPOINT: one endpoint or several, comma-separated, each
/// "host", "host:port", "[ipv6]:port", with "http://" or "https://" in
/// front or not (http). Errors name the variable and the entry at fault.
Status parse_etcd_endpoints(const std::string& text, std::vector<EtcdEndpoint>* out);
/// "a:1, b:2": the endpoints as errors name them.
std::string etcd_endpoints_text(const std::vector<EtcdEndpoint>& endpoints);

struct EtcdKeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0;
  int64_t lease = 0;  // the lease the key lives under (0: none)
};

/// One operation of a transaction: a put (under `lease`, 0: none) or a delete.
struct EtcdOp {
  bool remove = false;
  std::string key, value;
  int64_t lease = 0;
};
/// A transaction's condition: `key` is absent (its create_revision is 0),
/// or its value is `value`.
struct EtcdCompare {
  std::string key;
  bool absent = false;
  std::string value;
};

// The bodies of the requests (compact JSON, keys and values in base64).
std::string etcd_put_body(const std::string& key, const std::string& value, int64_t lease);
/// One key, or with `range_end` ("": none) every key from `key` up to it.
std::string etcd_range_body(const std::string& key, const std::string& range_end);
std::string etcd_delete_body(const std::string& key);
/// /v3/kv/txn: `ops` when `compare` holds, nothing otherwise.
std::string etcd_txn_body(const EtcdCompare& compare, const std::vector<EtcdOp>& ops);
std::string etcd_grant_body(int64_t ttl_seconds);
/// /v3/lease/keepalive and /v3/lease/revoke.
std::string etcd_lease_body(int64_t lease);
std::string etcd_authenticate_body(const std::string& user, const std::string& password);
/// The first key after every key that starts with `prefix` (a range's end).
std::string etcd_prefix_end(const std::string& prefix);

/// What an answer of the gateway says, whichever request it answers; what
/// it leaves out stays empty or 0 (etcd omits zero values).
struct EtcdAnswer {
  std::string error;              // an error's text ("error" or "message"); "" for none
  int64_t revision = 0;           // header.revision
  std::vector<EtcdKeyValue> kvs;  // a range's keys
  bool succeeded = false;         // a transaction's condition held
  int64_t lease = 0;              // a lease granted ("ID")
  int64_t ttl = 0;                // a grant's or keepalive's TTL (keepalive: 0, the lease is gone)
  std::string token;              // /v3/auth/authenticate's
};

/// Reads the body of an answer (a keepalive's "result" included). An error
/// when it is not JSON or a field has the wrong type (a key or value that
/// is not base64, an int64 that is not a whole number), naming it.
Status read_etcd_answer(const std::string& body, EtcdAnswer* out);

std::string base64_encode(const std::string& bytes);
/// False for text that is not base64 (length not a multiple of 4, other characters).
bool base64_decode(const std::string& text, std::string* bytes);

}  // namespace chorus::detail
