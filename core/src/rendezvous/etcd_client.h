#pragma once
// A small etcd v3 client for the elastic rendezvous without a launcher
// (rendezvous/etcd_rendezvous.h, docs/elastic.md): HTTP/1.1 requests with
// JSON bodies to etcd's gRPC gateway (/v3/kv/*, /v3/lease/*,
// /v3/auth/authenticate) through libcurl (Debian's libcurl4-openssl-dev:
// keep-alive connections, TLS, client certificates), the bodies and the
// answers in rendezvous/etcd_json.h. With a user (CHORUS_RDZV_USER) it
// authenticates and sends the token in the Authorization header, again
// when etcd says the token is not valid (it expired, or another member of
// the cluster gave it).
//
// Several endpoints (the members of an etcd cluster): requests go to one
// until it fails to answer (no connection, TLS refused, no answer in time,
// an HTTP 5xx: a member without a leader), then to the next; an error
// names every endpoint tried and why each failed. Every request is bounded
// by a deadline, shared among the endpoints still to try. Not thread-safe:
// one client per thread.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "net/tcp_socket.h"
#include "rendezvous/etcd_json.h"

namespace chorus::detail {

/// TLS to https:// endpoints: the CA that signed etcd's certificate ("":
/// the system's), and this client's certificate and key for etcd's
/// --client-cert-auth ("": none).
struct EtcdTls {
  std::string ca_file, cert_file, key_file;
};

struct EtcdConnection {
  std::vector<EtcdEndpoint> endpoints;
  EtcdTls tls;
  std::string user, password;
};

/// The files of `tls` (CHORUS_RDZV_CA_FILE, _CERT_FILE, _KEY_FILE): each
/// readable PEM, the certificate valid now and matching the key, and given
/// only with an https:// endpoint. Errors name the variable and the file.
Status check_etcd_tls(const EtcdTls& tls, const std::vector<EtcdEndpoint>& endpoints);

class EtcdClient {
 public:
  explicit EtcdClient(EtcdConnection connection);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

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
  /// This end's address of the last connection to etcd (asking etcd its
  /// version first when there was none).
  Status local_address(Deadline deadline, std::string* out);

  /// The endpoints, as errors name them.
  std::string endpoints_text() const { return etcd_endpoints_text(connection_.endpoints); }

 private:
  struct Reply {
    long status = 0;
    std::string body;
  };
  Status call(const std::string& path, const std::string& body, Deadline deadline, EtcdAnswer* out);
  Status post_anywhere(const std::string& path, const std::string* body, Deadline deadline, Reply* out);
  Status post(const EtcdEndpoint& endpoint, const std::string& path, const std::string* body, Deadline deadline,
              Reply* out);
  std::string failure_hint(int code, const EtcdEndpoint& endpoint) const;
  Status authenticate(Deadline deadline);
  Status range(const std::string& body, Deadline deadline, std::vector<EtcdKeyValue>* out);

  const EtcdConnection connection_;
  void* curl_ = nullptr;   // libcurl's easy handle (CURL*), kept so its connections are reused
  size_t current_ = 0;     // the endpoint that answered last
  bool asked_ = false;     // a request went out: CURLINFO_LOCAL_IP has its connection's address
  std::string token_;      // from /v3/auth/authenticate; "" without a user
  char error_[256] = {0};  // libcurl's message of the last failure (CURLOPT_ERRORBUFFER)
};

}  // namespace chorus::detail
