// rendezvous/etcd_client.h: requests to etcd's JSON gateway through
// libcurl, moving to the next endpoint when one fails.
#include "rendezvous/etcd_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <iterator>
#include <mutex>
#include <utility>

namespace chorus::detail {

namespace {

constexpr size_t kMaxBodyBytes = 64u << 20;  // a range of many members fits
constexpr auto kLeastTry = std::chrono::milliseconds(250);  // the least an endpoint gets of a request's time
const char kAuthenticate[] = "/v3/auth/authenticate";

size_t append_body(char* data, size_t size, size_t count, void* to) {
  auto* body = static_cast<std::string*>(to);
  if (body->size() + size * count > kMaxBodyBytes) return 0;  // libcurl ends the transfer: an error
  body->append(data, size * count);
  return size * count;
}

// Once per process, before any handle (not thread-safe in every libcurl).
void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// A deadline's milliseconds left, at least 1 (0 means "no limit" to libcurl).
long millis_until(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<long>(std::max<int64_t>(left, 1));
}

}  // namespace

EtcdClient::EtcdClient(EtcdConnection connection) : connection_(std::move(connection)) {
  init_curl();
  CURL* curl = curl_easy_init();
  curl_ = curl;
  if (curl == nullptr) return;                   // every request fails, saying so
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");  // etcd is reached directly, whatever http_proxy says
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  const EtcdTls& tls = connection_.tls;
  if (!tls.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, tls.ca_file.c_str());
  if (!tls.cert_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERT, tls.cert_file.c_str());
  if (!tls.key_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEY, tls.key_file.c_str());
}

EtcdClient::~EtcdClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

// What the variables may have to do with a failure, for its error. A
// client certificate that etcd refuses ends the connection after the
// handshake (TLS 1.3): libcurl then reports a failed send or receive.
std::string EtcdClient::failure_hint(int code, const EtcdEndpoint& endpoint) const {
  const EtcdTls& tls = connection_.tls;
  const std::string said = error_;
  if (!endpoint.tls) return code == CURLE_GOT_NOTHING ? " (etcd there may speak https://)" : "";
  if (code == CURLE_PEER_FAILED_VERIFICATION) {
    return " (etcd's certificate is not signed by " +
           (tls.ca_file.empty() ? std::string("a CA this system trusts; CHORUS_RDZV_CA_FILE names etcd's CA")
                                : "CHORUS_RDZV_CA_FILE=" + tls.ca_file) +
           ", or it does not name " + endpoint.host + ")";
  }
  if (code == CURLE_SSL_CACERT_BADFILE) return " (CHORUS_RDZV_CA_FILE=" + tls.ca_file + ")";
  if (code == CURLE_SSL_CERTPROBLEM) return " (CHORUS_RDZV_CERT_FILE, CHORUS_RDZV_KEY_FILE)";
  if (said.find("wrong version number") != std::string::npos) return " (etcd there may speak plain http://)";
  const int ended[] = {CURLE_SSL_CONNECT_ERROR, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR};
  if (std::find(std::begin(ended), std::end(ended), code) == std::end(ended)) return "";
  if (tls.cert_file.empty()) {
    return " (etcd ended the TLS connection: with --client-cert-auth it wants a client certificate, and none was "
           "given: CHORUS_RDZV_CERT_FILE, CHORUS_RDZV_KEY_FILE)";
  }
  return " (etcd ended the TLS connection: it may not trust CHORUS_RDZV_CERT_FILE=" + tls.cert_file +
         ", signed by a CA other than its --trusted-ca-file)";
}

// One request to one endpoint: a POST of `body`, or a GET without one.
// OK once an answer came, whatever its HTTP status.
Status EtcdClient::post(const EtcdEndpoint& endpoint, const std::string& path, const std::string* body,
                        Deadline deadline, Reply* out) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return Status::unknown_error("libcurl could not make a handle (out of memory?)");
  const std::string url = endpoint.url() + path;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!token_.empty()) headers = curl_slist_append(headers, ("Authorization: " + token_).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, millis_until(deadline));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, millis_until(deadline));
  out->body.clear();
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out->body);
  error_[0] = '\0';
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  if (code != CURLE_OK) {
    const std::string why = error_[0] != '\0' ? error_ : curl_easy_strerror(code);
    const bool silent = code == CURLE_COULDNT_CONNECT || code == CURLE_OPERATION_TIMEDOUT;
    return Status(silent ? StatusCode::kTimeout : StatusCode::kUnknownError, why + failure_hint(code, endpoint));
  }
  asked_ = true;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
  return Status::ok();
}

// The endpoint that answered last, then the next ones in turn, each given
// a share of the time left; a 5xx (a member without a leader, or failing)
// counts as no answer. A timeout when none answered at all (nothing
// listens, no answer in time, no leader: etcd may be starting), an unknown
// error when one refused (TLS, a reset).
Status EtcdClient::post_anywhere(const std::string& path, const std::string* body, Deadline deadline, Reply* out) {
  const std::vector<EtcdEndpoint>& endpoints = connection_.endpoints;
  const size_t n = endpoints.size();
  std::string tried;
  bool silent = true;
  for (size_t i = 0; i < n; ++i) {
    const EtcdEndpoint& e = endpoints[current_];
    const auto now = Clock::now();
    if (now >= deadline) {
      tried += (tried.empty() ? "" : "; ") + e.text() + ": not tried, no time left";
      current_ = (current_ + 1) % n;
      continue;
    }
    const Clock::duration part = (deadline - now) / static_cast<Clock::rep>(n - i);
    const Deadline share = std::min<Deadline>(deadline, now + std::max<Clock::duration>(part, kLeastTry));
    Status s = post(e, path, body, share, out);
    if (s.is_ok() && out->status < 500) return s;
    silent = silent && (s.is_ok() || s.code() == StatusCode::kTimeout);
    if (s.is_ok()) {
      EtcdAnswer answer;
      read_etcd_answer(out->body, &answer);
      s = Status::unknown_error("HTTP " + std::to_string(out->status) +
                                (answer.error.empty() ? " " + out->body.substr(0, 200) : " " + answer.error));
    }
    tried += (n > 1 ? (tried.empty() ? "" : "; ") + e.text() + ": " : "") + s.message();
    current_ = (current_ + 1) % n;
  }
  return Status(silent ? StatusCode::kTimeout : StatusCode::kUnknownError,
                "could not reach etcd at " + std::string(n > 1 ? "any of " : "") + endpoints_text() +
                    " (CHORUS_RDZV_ENDPOINT): " + tried);
}

Status EtcdClient::call(const std::string& path, const std::string& body, Deadline deadline, EtcdAnswer* out) {
  for (int attempt = 0;; ++attempt) {
    if (!connection_.user.empty() && token_.empty() && path != kAuthenticate) {
      Status s = authenticate(deadline);
      if (!s.is_ok()) return s;
    }
    Reply reply;
    Status s = post_anywhere(path, &body, deadline, &reply);
    if (!s.is_ok()) return s;
    EtcdAnswer answer;
    const Status read = read_etcd_answer(reply.body, &answer);
    if (reply.status == 200 && read.is_ok()) {
      *out = std::move(answer);
      return Status::ok();
    }
    std::string why = !answer.error.empty() ? answer.error
                      : reply.status == 200 ? read.message()
                                            : "HTTP " + std::to_string(reply.status) + " " + reply.body.substr(0, 200);
    // Expired, or given by another member of the cluster: authenticate again, once.
    if (attempt == 0 && !connection_.user.empty() && why.find("auth token") != std::string::npos) {
      token_.clear();
      continue;
    }
    if (why.find("user name is empty") != std::string::npos || why.find("authentication failed") != std::string::npos) {
      why += " (CHORUS_RDZV_USER, CHORUS_RDZV_PASSWORD)";
    }
    return Status::unknown_error("etcd at " + connection_.endpoints[current_].text() + " refused " + path + ": " + why);
  }
}

Status EtcdClient::authenticate(Deadline deadline) {
  EtcdAnswer answer;
  Status s = call(kAuthenticate, etcd_authenticate_body(connection_.user, connection_.password), deadline, &answer);
  if (!s.is_ok()) return s;
  token_ = answer.token;
  if (token_.empty()) {
    return Status::unknown_error("etcd at " + connection_.endpoints[current_].text() + " authenticated with no token");
  }
  return Status::ok();
}

Status EtcdClient::put(const std::string& key, const std::string& value, int64_t lease, Deadline deadline,
                       int64_t* revision) {
  EtcdAnswer answer;
  Status s = call("/v3/kv/put", etcd_put_body(key, value, lease), deadline, &answer);
  if (s.is_ok() && revision) *revision = answer.revision;
  return s;
}

Status EtcdClient::range(const std::string& body, Deadline deadline, std::vector<EtcdKeyValue>* out) {
  EtcdAnswer answer;
  Status s = call("/v3/kv/range", body, deadline, &answer);
  if (s.is_ok()) *out = std::move(answer.kvs);
  return s;
}

Status EtcdClient::get(const std::string& key, Deadline deadline, std::vector<EtcdKeyValue>* out) {
  return range(etcd_range_body(key, ""), deadline, out);
}

Status EtcdClient::get_prefix(const std::string& prefix, Deadline deadline, std::vector<EtcdKeyValue>* out) {
  return range(etcd_range_body(prefix, etcd_prefix_end(prefix)), deadline, out);
}

Status EtcdClient::remove(const std::string& key, Deadline deadline) {
  EtcdAnswer answer;
  return call("/v3/kv/deleterange", etcd_delete_body(key), deadline, &answer);
}

Status EtcdClient::txn(const EtcdCompare& compare, const std::vector<EtcdOp>& ops, Deadline deadline, bool* succeeded) {
  EtcdAnswer answer;
  Status s = call("/v3/kv/txn", etcd_txn_body(compare, ops), deadline, &answer);
  *succeeded = s.is_ok() && answer.succeeded;
  return s;
}

Status EtcdClient::grant(int64_t ttl_seconds, Deadline deadline, int64_t* lease) {
  EtcdAnswer answer;
  Status s = call("/v3/lease/grant", etcd_grant_body(ttl_seconds), deadline, &answer);
  if (!s.is_ok()) return s;
  *lease = answer.lease;
  if (*lease == 0) {
    return Status::unknown_error("etcd at " + connection_.endpoints[current_].text() + " granted a lease with no ID");
  }
  return Status::ok();
}

// The gateway answers the streaming call with one result per request sent;
// its TTL is left out when 0: the lease is gone.
Status EtcdClient::keep_alive(int64_t lease, Deadline deadline, int64_t* ttl) {
  EtcdAnswer answer;
  Status s = call("/v3/lease/keepalive", etcd_lease_body(lease), deadline, &answer);
  if (s.is_ok()) *ttl = answer.ttl;
  return s;
}

Status EtcdClient::revoke(int64_t lease, Deadline deadline) {
  EtcdAnswer answer;
  return call("/v3/lease/revoke", etcd_lease_body(lease), deadline, &answer);
}

Status EtcdClient::local_address(Deadline deadline, std::string* out) {
  if (!asked_) {
    Reply reply;
    Status s = post_anywhere("/version", nullptr, deadline, &reply);
    if (!s.is_ok()) return s;
  }
  char* ip = nullptr;
  curl_easy_getinfo(static_cast<CURL*>(curl_), CURLINFO_LOCAL_IP, &ip);
  if (ip == nullptr || *ip == '\0') {
    return Status::unknown_error("libcurl did not say this end's address of the connection to etcd at " +
                                 connection_.endpoints[current_].text());
  }
  *out = ip;
  return Status::ok();
}

}  // namespace chorus::detail
