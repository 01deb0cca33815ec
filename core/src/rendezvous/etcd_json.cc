// rendezvous/etcd_json.h: the endpoints, the requests' bodies and the
// answers' reading, JSON through nlohmann/json, base64 through OpenSSL.
#include "rendezvous/etcd_json.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/number_text.h"

namespace chorus::detail {

namespace {

using Json = nlohmann::json;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// One entry of CHORUS_RDZV_ENDPOINT; `bad` makes the error that names it.
template <typename Bad>
Status parse_endpoint(std::string rest, const Bad& bad, EtcdEndpoint* out) {
  EtcdEndpoint e;
  if (lower(rest).rfind("https://", 0) == 0) {
    e.tls = true;
    rest = rest.substr(8);
  } else if (lower(rest).rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  } else if (rest.find("://") != std::string::npos) {
    return bad("the scheme is neither http:// nor https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
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
  if (e.host.empty() || e.host.find_first_of("/ \t[]") != std::string::npos) return bad("expected host:port");
  int64_t p = 2379;
  if (!port.empty() && (!whole_number(port, 1, 65535, &p))) return bad("the port is not 1..65535");
  e.port = static_cast<int>(p);
  *out = std::move(e);
  return Status::ok();
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json put_request(const std::string& key, const std::string& value, int64_t lease) {
  Json put = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return put;
}

// An int64 field (etcd writes them as strings; a JSON number is taken
// too); absent or null: `*out` stays as it is.
Status int_field(const Json& object, const char* name, const std::string& where, int64_t* out) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return Status::ok();
  if (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()}) {
    *out = static_cast<int64_t>(it->get<uint64_t>());
    return Status::ok();
  }
  if (it->is_number_integer() && !it->is_number_unsigned()) {
    *out = it->get<int64_t>();
    return Status::ok();
  }
  if (it->is_string() && whole_number(it->get_ref<const std::string&>(), INT64_MIN, INT64_MAX, out))
    return Status::ok();
  return Status::unknown_error("etcd's answer: " + where + name + " is not a whole number");
}

// A string field ("" when absent or null).
Status string_field(const Json& object, const char* name, const std::string& where, std::string* out) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return Status::ok();
  if (!it->is_string()) return Status::unknown_error("etcd's answer: " + where + name + " is not a string");
  *out = it->get<std::string>();
  return Status::ok();
}

Status bytes_field(const Json& object, const char* name, const std::string& where, std::string* out) {
  std::string text;
  Status s = string_field(object, name, where, &text);
  if (s.is_ok() && !base64_decode(text, out))
    s = Status::unknown_error("etcd's answer: " + where + name + " is not base64");
  return s;
}

Status read_key_value(const Json& kv, const std::string& where, EtcdKeyValue* out) {
  if (!kv.is_object()) return Status::unknown_error("etcd's answer: " + where + " is not an object");
  const std::string at = where + ".";
  Status s = bytes_field(kv, "key", at, &out->key);
  if (s.is_ok()) s = bytes_field(kv, "value", at, &out->value);
  if (s.is_ok()) s = int_field(kv, "create_revision", at, &out->create_revision);
  if (s.is_ok()) s = int_field(kv, "mod_revision", at, &out->mod_revision);
  if (s.is_ok()) s = int_field(kv, "lease", at, &out->lease);
  return s;
}

// The fields every answer may have: header.revision, a grant's or
// keepalive's ID and TTL, an error's text, a token, a transaction's verdict.
Status read_fields(const Json& j, const std::string& where, EtcdAnswer* out) {
  Status s = Status::ok();
  const auto header = j.find("header");
  if (header != j.end() && header->is_object()) s = int_field(*header, "revision", where + "header.", &out->revision);
  if (s.is_ok()) s = int_field(j, "ID", where, &out->lease);
  if (s.is_ok()) s = int_field(j, "TTL", where, &out->ttl);
  if (s.is_ok()) s = string_field(j, "token", where, &out->token);
  if (s.is_ok()) s = string_field(j, "error", where, &out->error);
  if (s.is_ok() && out->error.empty()) s = string_field(j, "message", where, &out->error);
  const auto succeeded = j.find("succeeded");
  if (s.is_ok() && succeeded != j.end() && !succeeded->is_null()) {
    if (!succeeded->is_boolean())
      return Status::unknown_error("etcd's answer: " + where + "succeeded is not true/false");
    out->succeeded = succeeded->get<bool>();
  }
  return s;
}

}  // namespace

std::string EtcdEndpoint::text() const {
  return std::string(tls ? "https://" : "") + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::string EtcdEndpoint::url() const { return tls ? text() : "http://" + text(); }

Status parse_etcd_endpoints(const std::string& text, std::vector<EtcdEndpoint>* out) {
  std::vector<EtcdEndpoint> endpoints;
  size_t from = 0;
  for (int n = 1;; ++n) {
    const size_t comma = text.find(',', from);
    const std::string entry = trim(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    const auto bad = [&](const std::string& why) {
      const std::string which = comma == std::string::npos && n == 1 ? "" : " (entry " + std::to_string(n) + ")";
      return Status::invalid_argument("CHORUS_RDZV_ENDPOINT='" + text + "': '" + entry + "'" + which + ": " + why);
    };
    if (entry.empty()) return bad("an empty endpoint");
    EtcdEndpoint e;
    Status s = parse_endpoint(entry, bad, &e);
    if (!s.is_ok()) return s;
    for (const EtcdEndpoint& other : endpoints) {
      if (other.host == e.host && other.port == e.port) return bad("given twice");
    }
    endpoints.push_back(std::move(e));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  *out = std::move(endpoints);
  return Status::ok();
}

std::string etcd_endpoints_text(const std::vector<EtcdEndpoint>& endpoints) {
  std::string out;
  for (const EtcdEndpoint& e : endpoints) out += (out.empty() ? "" : ", ") + e.text();
  return out;
}

std::string etcd_prefix_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xFF) end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // every key
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

std::string etcd_put_body(const std::string& key, const std::string& value, int64_t lease) {
  return dump(put_request(key, value, lease));
}

std::string etcd_range_body(const std::string& key, const std::string& range_end) {
  Json range = {{"key", base64_encode(key)}};
  if (!range_end.empty()) range["range_end"] = base64_encode(range_end);
  return dump(range);
}

std::string etcd_delete_body(const std::string& key) { return dump({{"key", base64_encode(key)}}); }

std::string etcd_txn_body(const EtcdCompare& compare, const std::vector<EtcdOp>& ops) {
  Json condition = {{"key", base64_encode(compare.key)}};
  if (compare.absent) {
    condition["target"] = "CREATE";
    condition["create_revision"] = "0";
  } else {
    condition["target"] = "VALUE";
    condition["value"] = base64_encode(compare.value);
  }
  Json success = Json::array();
  for (const EtcdOp& op : ops) {
    success.push_back(op.remove ? Json{{"request_delete_range", {{"key", base64_encode(op.key)}}}}
                                : Json{{"request_put", put_request(op.key, op.value, op.lease)}});
  }
  return dump({{"compare", Json::array({condition})}, {"success", success}});
}

std::string etcd_grant_body(int64_t ttl_seconds) { return dump({{"TTL", std::to_string(ttl_seconds)}}); }

std::string etcd_lease_body(int64_t lease) { return dump({{"ID", std::to_string(lease)}}); }

std::string etcd_authenticate_body(const std::string& user, const std::string& password) {
  return dump({{"name", user}, {"password", password}});
}

Status read_etcd_answer(const std::string& body, EtcdAnswer* out) {
  *out = EtcdAnswer();
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {
    return Status::unknown_error(std::string("etcd's answer is not JSON (") + e.what() + "): '" + body.substr(0, 80) +
                                 "'");
  }
  if (!j.is_object()) return Status::unknown_error("etcd's answer is not a JSON object: '" + body.substr(0, 80) + "'");
  Status s = read_fields(j, "", out);
  const auto result = j.find("result");  // a keepalive's, streamed
  if (s.is_ok() && result != j.end() && result->is_object()) s = read_fields(*result, "result.", out);
  const auto kvs = j.find("kvs");  // etcd leaves an empty list out
  if (!s.is_ok() || kvs == j.end() || kvs->is_null()) return s;
  if (!kvs->is_array()) return Status::unknown_error("etcd's answer: kvs is not a list");
  for (size_t i = 0; i < kvs->size() && s.is_ok(); ++i) {
    EtcdKeyValue kv;
    s = read_key_value((*kvs)[i], "kvs[" + std::to_string(i) + "]", &kv);
    out->kvs.push_back(std::move(kv));
  }
  if (!s.is_ok()) out->kvs.clear();
  return s;
}

std::string base64_encode(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool base64_decode(const std::string& text, std::string* bytes) {
  bytes->clear();
  if (text.size() % 4 != 0) return false;
  if (text.empty()) return true;
  for (const char c : text) {  // EVP_DecodeBlock would skip blanks at the ends
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && c != '=') return false;
  }
  const size_t padding = text.find('=');  // only at the end, at most two
  if (padding != std::string::npos && (padding < text.size() - 2 || text.back() != '=')) return false;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t pad = 0;  // EVP_DecodeBlock counts the padding's zero bytes
  if (text[text.size() - 1] == '=') ++pad;
  if (text[text.size() - 2] == '=') ++pad;
  if (static_cast<size_t>(n) < pad) return false;
  out.resize(static_cast<size_t>(n) - pad);
  *bytes = std::move(out);
  return true;
}

}  // namespace chorus::detail
