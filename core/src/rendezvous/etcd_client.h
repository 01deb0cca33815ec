#pragma once
// A minimal etcd v3 client for the elastic rendezvous without a launcher
// (rendezvous/etcd_rendezvous.h, docs/elastic.md): HTTP/1.1 with JSON bodies
// to etcd's gRPC gateway (/v3/kv/*, /v3/lease/*, /v3/auth/authenticate),
// over this transport's own sockets (net/tcp_socket.h), so Chorus
// needs no gRPC, HTTP or JSON library. Keys and values travel in base64
// (rendezvous/etcd_json.h). With a user (CHORUS_RDZV_USER) it authenticates
// and sends the token in the Authorization header, again when etcd says
// the token expired. Plain HTTP only: no TLS.
//
// One connection, kept open between requests and opened again when it
// fails; every request is bounded by a deadline. Not thread-safe: one
// client per thread. The request bodies and the HTTP response reader are
// pure functions, unit-tested (test/rendezvous/test_etcd_rendezvous.cc).

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "net/tcp_socket.h"
#include "rendezvous/etcd_json.h"

namespace chorus::detail {

struct EtcdEndpoint {
  std::string host;
  int port = 2379;
  std::string text() const;  // host:port ([host]:port for IPv6)
};

/// "host", "host:port", "[ipv6]:port", "http://host:port"; errors name CHORUS_RDZV_ENDPOINT.
Status parse_etcd_endpoint(const std::string& text, EtcdEndpoint* out);

struct EtcdKeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0;
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

/// The body of /v3/kv/txn: `ops` when `compare` holds, nothing otherwise.
std::string etcd_txn_body(const EtcdCompare& compare, const std::vector<EtcdOp>& ops);
/// The first key after every key that starts with `prefix` (a range's end).
std::string etcd_prefix_end(const std::string& prefix);
/// The key-values of a /v3/kv/range answer (none: an empty list).
Status etcd_key_values(const JsonValue& answer, std::vector<EtcdKeyValue>* out);

struct HttpResponse {
  int status = 0;
  std::string body;
  bool close = false;        // the server closes the connection after it
  bool until_close = false;  // no length given: the body ends when the connection does
};
enum class HttpParse { kNeedMore, kBad, kDone };
/// The response in `bytes` (all received so far): kNeedMore until it is
/// whole; kBad (with `*why`) when it is not HTTP/1.x. Content-Length and
/// chunked bodies (trailers skipped).
HttpParse parse_http_response(const std::string& bytes, HttpResponse* out, std::string* why);

class EtcdClient {
 public:
  EtcdClient(EtcdEndpoint endpoint, std::string user, std::string password);

  Status put(const std::string& key, const std::string& value, int64_t lease, Deadline deadline,
             int64_t* revision = nullptr);
  /// The key (0 or 1 of them), or every key under a prefix, by key.
  Status get(const std::string& key, Deadline deadline, std::vector<EtcdKeyValue>* out);
  Status get_prefix(const std::string& prefix, Deadline deadline, std::vector<EtcdKeyValue>* out);
  Status remove(const std::string& key, Deadline deadline);
  Status txn(const EtcdCompare& compare, const std::vector<EtcdOp>& ops, Deadline deadline, bool* succeeded);
  Status grant(int64_t ttl_seconds, Deadline deadline, int64_t* lease);
  /// `*ttl` 0: the lease is gone (it expired, or was revoked).
  Status keep_alive(int64_t lease, Deadline deadline, int64_t* ttl);
  Status revoke(int64_t lease, Deadline deadline);
  /// This end's address of the connection to etcd (connecting first if needed).
  Status local_address(Deadline deadline, std::string* out);

  const EtcdEndpoint& endpoint() const { return endpoint_; }

 private:
  Status call(const std::string& path, const std::string& body, Deadline deadline, JsonValue* out);
  Status exchange(const std::string& request, Deadline deadline, HttpResponse* out);
  Status exchange_once(const std::string& request, Deadline deadline, HttpResponse* out, bool* sent_nothing);
  Status authenticate(Deadline deadline);
  Status range(const std::string& body, Deadline deadline, std::vector<EtcdKeyValue>* out);
  Status unreachable(const std::string& why) const;

  const EtcdEndpoint endpoint_;
  const std::string user_, password_;
  Socket connection_;
  std::string token_;  // from /v3/auth/authenticate; "" without a user
};

}  // namespace chorus::detail
