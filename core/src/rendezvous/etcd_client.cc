// rendezvous/etcd_client.h: HTTP/1.1 requests to etcd's JSON gateway and the
// reading of their answers.
#include "rendezvous/etcd_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace chorus::detail {

namespace {

constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 64u << 20;  // a range of many members fits

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Digits only (no sign, space or 0x), as HTTP writes lengths.
bool whole_number(const std::string& text, int base, int64_t* out) {
  const auto digit = [base](char c) {
    return base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : c >= '0' && c <= '9';
  };
  if (text.empty() || !std::all_of(text.begin(), text.end(), digit)) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, base);
  if (errno != 0 || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

// The body of a chunked response from `at`: kDone once the last chunk and
// the trailers (up to an empty line) arrived.
HttpParse decode_chunked(const std::string& bytes, size_t at, std::string* body, std::string* why) {
  body->clear();
  for (;;) {
    const size_t eol = bytes.find("\r\n", at);
    if (eol == std::string::npos) return HttpParse::kNeedMore;
    std::string size_text = bytes.substr(at, eol - at);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    int64_t size = 0;
    if (!whole_number(size_text, 16, &size) || body->size() + static_cast<size_t>(size) > kMaxBodyBytes) {
      *why = "a bad chunk size '" + size_text.substr(0, 20) + "'";
      return HttpParse::kBad;
    }
    at = eol + 2;
    if (size == 0) break;
    if (bytes.size() < at + static_cast<size_t>(size) + 2) return HttpParse::kNeedMore;
    body->append(bytes, at, static_cast<size_t>(size));
    at += static_cast<size_t>(size) + 2;
  }
  for (;;) {  // trailers, then an empty line
    const size_t eol = bytes.find("\r\n", at);
    if (eol == std::string::npos) return HttpParse::kNeedMore;
    if (eol == at) return HttpParse::kDone;
    at = eol + 2;
  }
}

// Up to 64 KiB that arrived, waiting until `deadline`; 0 bytes: closed.
Status recv_some(int fd, Deadline deadline, std::string* into, size_t* got) {
  char buffer[65536];
  for (;;) {
    const ssize_t k = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (k >= 0) {
      into->append(buffer, static_cast<size_t>(k));
      *got = static_cast<size_t>(k);
      return Status::ok();
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Status::unknown_error(std::string("recv: ") + std::strerror(errno));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Status::timeout("no answer in time");
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
  }
}

std::string b64(const std::string& s) { return json_quote(base64_encode(s)); }

std::string put_fields(const std::string& key, const std::string& value, int64_t lease) {
  std::string out = "\"key\":" + b64(key) + ",\"value\":" + b64(value);
  if (lease != 0) out += ",\"lease\":\"" + std::to_string(lease) + "\"";
  return out;
}

}  // namespace

std::string EtcdEndpoint::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Status parse_etcd_endpoint(const std::string& text, EtcdEndpoint* out) {
  std::string rest = text;
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument("CHORUS_RDZV_ENDPOINT='" + text + "': " + why);
  };
  if (lower(rest).rfind("https://", 0) == 0) return bad("TLS to etcd is not supported; give its plain HTTP endpoint");
  if (lower(rest).rfind("http://", 0) == 0) rest = rest.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  EtcdEndpoint e;
  std::string port;
  if (!rest.empty() && rest[0] == '[') {  // [ipv6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) return bad("an IPv6 address without its ']'");
    e.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] != ':') return bad("expected host:port");
    if (close + 1 < rest.size()) port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.find(':');
    e.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
    if (colon != std::string::npos && rest.find(':', colon + 1) != std::string::npos) {
      return bad("write an IPv6 address as [address]:port");
    }
  }
  if (e.host.empty() || e.host.find_first_of("/ \t,") != std::string::npos) return bad("expected host:port");
  int64_t p = 2379;
  if (!port.empty() && (!whole_number(port, 10, &p) || p < 1 || p > 65535)) return bad("the port is not 1..65535");
  e.port = static_cast<int>(p);
  *out = std::move(e);
  return Status::ok();
}

std::string etcd_prefix_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xFF) end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // every key
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

std::string etcd_txn_body(const EtcdCompare& compare, const std::vector<EtcdOp>& ops) {
  std::string out = "{\"compare\":[{\"key\":" + b64(compare.key);
  out += compare.absent ? ",\"target\":\"CREATE\",\"create_revision\":\"0\"}]"
                        : ",\"target\":\"VALUE\",\"value\":" + b64(compare.value) + "}]";
  out += ",\"success\":[";
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) out += ",";
    out += ops[i].remove ? "{\"request_delete_range\":{\"key\":" + b64(ops[i].key) + "}}"
                         : "{\"request_put\":{" + put_fields(ops[i].key, ops[i].value, ops[i].lease) + "}}";
  }
  return out + "]}";
}

Status etcd_key_values(const JsonValue& answer, std::vector<EtcdKeyValue>* out) {
  out->clear();
  const JsonValue* kvs = answer.get("kvs");
  if (kvs == nullptr) return Status::ok();  // etcd leaves an empty list out
  if (kvs->kind != JsonValue::Kind::kArray) return Status::unknown_error("etcd answered a range with no list of keys");
  for (const JsonValue& kv : kvs->items) {
    EtcdKeyValue e;
    if (!base64_decode(JsonValue::as_string(kv.get("key")), &e.key) ||
        !base64_decode(JsonValue::as_string(kv.get("value")), &e.value)) {
      return Status::unknown_error("etcd answered a range with a key or value that is not base64");
    }
    e.create_revision = JsonValue::as_int(kv.get("create_revision"));
    e.mod_revision = JsonValue::as_int(kv.get("mod_revision"));
    out->push_back(std::move(e));
  }
  return Status::ok();
}

// The status line and headers, then the body as they say.
HttpParse parse_http_response(const std::string& bytes, HttpResponse* out, std::string* why) {
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (bytes.size() <= kMaxHeaderBytes) return HttpParse::kNeedMore;
    *why = "headers longer than 64 KiB";
    return HttpParse::kBad;
  }
  const auto digit = [&](size_t i) { return bytes[i] >= '0' && bytes[i] <= '9'; };
  if (bytes.compare(0, 7, "HTTP/1.") != 0 || end < 12 || bytes[8] != ' ' || !digit(9) || !digit(10) || !digit(11) ||
      bytes[9] == '0' || (bytes[12] != ' ' && bytes[12] != '\r')) {
    *why = "not an HTTP/1.x answer: '" + bytes.substr(0, std::min<size_t>(end, 40)) + "'";
    return HttpParse::kBad;
  }
  *out = HttpResponse();
  out->status = std::stoi(bytes.substr(9, 3));
  int64_t length = -1;
  bool chunked = false;
  for (size_t at = bytes.find("\r\n") + 2; at < end;) {
    const size_t eol = bytes.find("\r\n", at);
    const std::string line = bytes.substr(at, eol - at);
    at = eol + 2;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "content-length" && (!whole_number(value, 10, &length) || length > int64_t{kMaxBodyBytes})) {
      *why = "a bad Content-Length '" + value.substr(0, 20) + "'";
      return HttpParse::kBad;
    }
    if (name == "transfer-encoding") chunked = lower(value).find("chunked") != std::string::npos;
    if (name == "connection") out->close = lower(value).find("close") != std::string::npos;
  }
  if (chunked) return decode_chunked(bytes, end + 4, &out->body, why);
  if (length < 0 && out->status != 204 && out->status != 304) {
    out->until_close = true;
    out->body = bytes.substr(end + 4);
    return HttpParse::kNeedMore;  // done when the connection closes
  }
  if (length < 0) length = 0;
  if (bytes.size() < end + 4 + static_cast<size_t>(length)) return HttpParse::kNeedMore;
  out->body = bytes.substr(end + 4, static_cast<size_t>(length));
  return HttpParse::kDone;
}

EtcdClient::EtcdClient(EtcdEndpoint endpoint, std::string user, std::string password)
    : endpoint_(std::move(endpoint)), user_(std::move(user)), password_(std::move(password)) {}

Status EtcdClient::unreachable(const std::string& why) const {
  return Status::unknown_error("could not reach etcd at " + endpoint_.text() + " (CHORUS_RDZV_ENDPOINT): " + why);
}

// One request on the open connection (opened first if none); `*sent_nothing`
// says whether a failure came before any byte of an answer, on a connection
// that was already open (the server may have closed it while idle).
Status EtcdClient::exchange_once(const std::string& request, Deadline deadline, HttpResponse* out, bool* sent_nothing) {
  *sent_nothing = false;
  const bool reused = connection_.valid();
  if (!reused) {
    Status s = connect_to(endpoint_.host, endpoint_.port, deadline, &connection_);
    if (!s.is_ok()) return unreachable(s.message());
  }
  Status s = send_exactly(connection_.fd(), request.data(), request.size(), deadline);
  std::string bytes, why;
  while (s.is_ok()) {
    size_t got = 0;
    s = recv_some(connection_.fd(), deadline, &bytes, &got);
    if (!s.is_ok()) break;
    const HttpParse p = parse_http_response(bytes, out, &why);
    if (p == HttpParse::kDone || (got == 0 && out->until_close)) {
      if (out->close || out->until_close) connection_.reset();
      return Status::ok();
    }
    if (p == HttpParse::kBad) s = Status::unknown_error("etcd's answer is not HTTP: " + why);
    if (got == 0 && s.is_ok()) s = Status::unknown_error("the connection closed before the answer ended");
  }
  connection_.reset();
  *sent_nothing = reused && bytes.empty() && s.code() != StatusCode::kTimeout;
  return unreachable(s.message());
}

Status EtcdClient::exchange(const std::string& request, Deadline deadline, HttpResponse* out) {
  bool sent_nothing = false;
  Status s = exchange_once(request, deadline, out, &sent_nothing);
  if (!s.is_ok() && sent_nothing) s = exchange_once(request, deadline, out, &sent_nothing);  // a stale connection
  return s;
}

Status EtcdClient::call(const std::string& path, const std::string& body, Deadline deadline, JsonValue* out) {
  for (int attempt = 0;; ++attempt) {
    if (!user_.empty() && token_.empty() && path != "/v3/auth/authenticate") {
      Status s = authenticate(deadline);
      if (!s.is_ok()) return s;
    }
    std::string request = "POST " + path + " HTTP/1.1\r\nHost: " + endpoint_.text() +
                          "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n";
    if (!token_.empty()) request += "Authorization: " + token_ + "\r\n";
    HttpResponse r;
    Status s = exchange(request + "\r\n" + body, deadline, &r);
    if (!s.is_ok()) return s;
    JsonValue answer;
    const Status json = parse_json(r.body, &answer);
    if (r.status == 200 && json.is_ok()) {
      *out = std::move(answer);
      return Status::ok();
    }
    std::string why = JsonValue::as_string(answer.get("error"));
    if (why.empty()) why = "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200);
    if (attempt == 0 && !user_.empty() && why.find("auth token") != std::string::npos) {
      token_.clear();  // expired: authenticate again, once
      continue;
    }
    if (why.find("user name is empty") != std::string::npos || why.find("authentication failed") != std::string::npos) {
      why += " (CHORUS_RDZV_USER, CHORUS_RDZV_PASSWORD)";
    }
    return Status::unknown_error("etcd at " + endpoint_.text() + " refused " + path + ": " + why);
  }
}

Status EtcdClient::authenticate(Deadline deadline) {
  JsonValue answer;
  Status s = call("/v3/auth/authenticate",
                  "{\"name\":" + json_quote(user_) + ",\"password\":" + json_quote(password_) + "}", deadline, &answer);
  if (!s.is_ok()) return s;
  token_ = JsonValue::as_string(answer.get("token"));
  if (token_.empty()) return Status::unknown_error("etcd at " + endpoint_.text() + " authenticated with no token");
  return Status::ok();
}

Status EtcdClient::put(const std::string& key, const std::string& value, int64_t lease, Deadline deadline,
                       int64_t* revision) {
  JsonValue answer;
  Status s = call("/v3/kv/put", "{" + put_fields(key, value, lease) + "}", deadline, &answer);
  if (s.is_ok() && revision)
    *revision = JsonValue::as_int(answer.get("header") ? answer.get("header")->get("revision") : nullptr);
  return s;
}

Status EtcdClient::range(const std::string& body, Deadline deadline, std::vector<EtcdKeyValue>* out) {
  JsonValue answer;
  Status s = call("/v3/kv/range", body, deadline, &answer);
  return s.is_ok() ? etcd_key_values(answer, out) : s;
}

Status EtcdClient::get(const std::string& key, Deadline deadline, std::vector<EtcdKeyValue>* out) {
  return range("{\"key\":" + b64(key) + "}", deadline, out);
}

Status EtcdClient::get_prefix(const std::string& prefix, Deadline deadline, std::vector<EtcdKeyValue>* out) {
  return range("{\"key\":" + b64(prefix) + ",\"range_end\":" + b64(etcd_prefix_end(prefix)) + "}", deadline, out);
}

Status EtcdClient::remove(const std::string& key, Deadline deadline) {
  JsonValue answer;
  return call("/v3/kv/deleterange", "{\"key\":" + b64(key) + "}", deadline, &answer);
}

Status EtcdClient::txn(const EtcdCompare& compare, const std::vector<EtcdOp>& ops, Deadline deadline, bool* succeeded) {
  JsonValue answer;
  Status s = call("/v3/kv/txn", etcd_txn_body(compare, ops), deadline, &answer);
  const JsonValue* ok = answer.get("succeeded");
  *succeeded = s.is_ok() && ok != nullptr && ok->text == "true";
  return s;
}

Status EtcdClient::grant(int64_t ttl_seconds, Deadline deadline, int64_t* lease) {
  JsonValue answer;
  Status s = call("/v3/lease/grant", "{\"TTL\":\"" + std::to_string(ttl_seconds) + "\"}", deadline, &answer);
  if (!s.is_ok()) return s;
  *lease = JsonValue::as_int(answer.get("ID"));
  if (*lease == 0) return Status::unknown_error("etcd at " + endpoint_.text() + " granted a lease with no ID");
  return Status::ok();
}

// The gateway answers the streaming call with one result per request sent.
Status EtcdClient::keep_alive(int64_t lease, Deadline deadline, int64_t* ttl) {
  JsonValue answer;
  Status s = call("/v3/lease/keepalive", "{\"ID\":\"" + std::to_string(lease) + "\"}", deadline, &answer);
  if (!s.is_ok()) return s;
  const JsonValue* result = answer.get("result");
  *ttl = JsonValue::as_int(result ? result->get("TTL") : nullptr);  // left out when 0: the lease is gone
  return Status::ok();
}

Status EtcdClient::revoke(int64_t lease, Deadline deadline) {
  JsonValue answer;
  return call("/v3/lease/revoke", "{\"ID\":\"" + std::to_string(lease) + "\"}", deadline, &answer);
}

Status EtcdClient::local_address(Deadline deadline, std::string* out) {
  if (!connection_.valid()) {
    Status s = connect_to(endpoint_.host, endpoint_.port, deadline, &connection_);
    if (!s.is_ok()) return unreachable(s.message());
  }
  *out = detail::local_address(connection_.fd());
  return Status::ok();
}

}  // namespace chorus::detail
