// Fuzz target: what the etcd client reads (rendezvous/etcd_json.h): the
// body of an answer of etcd's gateway (nlohmann/json underneath; the HTTP
// is libcurl's), the endpoints of CHORUS_RDZV_ENDPOINT, base64. The first
// byte picks where the bytes go in. Properties: the key-values read from an
// answer, written back as etcd writes them, read back the same; an endpoint
// read, written as text, reads back the same; base64 that decodes
// re-encodes to the same bytes.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "rendezvous/etcd_json.h"
#include "fuzz_check.h"

using namespace chorus::detail;

namespace {

bool same(const EtcdKeyValue& a, const EtcdKeyValue& b) {
  return a.key == b.key && a.value == b.value && a.create_revision == b.create_revision &&
         a.mod_revision == b.mod_revision && a.lease == b.lease;
}

void answer(const std::string& body) {
  EtcdAnswer a;
  if (!read_etcd_answer(body, &a).is_ok()) {
    FUZZ_CHECK(a.kvs.empty());
    return;
  }
  nlohmann::json kvs = nlohmann::json::array();
  for (const EtcdKeyValue& kv : a.kvs) {
    FUZZ_CHECK(kv.key.size() <= body.size() && kv.value.size() <= body.size());
    kvs.push_back({{"key", base64_encode(kv.key)},
                   {"value", base64_encode(kv.value)},
                   {"create_revision", std::to_string(kv.create_revision)},
                   {"mod_revision", kv.mod_revision},  // a number: etcd's strings and numbers read alike
                   {"lease", std::to_string(kv.lease)}});
  }
  const nlohmann::json again = {{"header", {{"revision", std::to_string(a.revision)}}},
                                {"kvs", kvs},
                                {"ID", std::to_string(a.lease)},
                                {"TTL", a.ttl},
                                {"succeeded", a.succeeded}};
  EtcdAnswer b;
  FUZZ_CHECK(read_etcd_answer(again.dump(), &b).is_ok());
  FUZZ_CHECK(b.revision == a.revision && b.lease == a.lease && b.ttl == a.ttl && b.succeeded == a.succeeded);
  FUZZ_CHECK(b.kvs.size() == a.kvs.size());
  for (size_t i = 0; i < a.kvs.size(); ++i) FUZZ_CHECK(same(a.kvs[i], b.kvs[i]));
}

void endpoints(const std::string& text) {
  std::vector<EtcdEndpoint> e;
  if (!parse_etcd_endpoints(text, &e).is_ok()) return;
  FUZZ_CHECK(!e.empty());
  std::vector<EtcdEndpoint> again;
  FUZZ_CHECK(parse_etcd_endpoints(etcd_endpoints_text(e), &again).is_ok());
  FUZZ_CHECK(again.size() == e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    FUZZ_CHECK(again[i].tls == e[i].tls && again[i].host == e[i].host && again[i].port == e[i].port);
    FUZZ_CHECK(e[i].port >= 1 && e[i].port <= 65535);
  }
}

void base64(const std::string& text) {
  std::string bytes;
  if (!base64_decode(text, &bytes)) return;
  std::string again;
  FUZZ_CHECK(base64_decode(base64_encode(bytes), &again) && again == bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = fuzz_bytes(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: answer(text); break;
    case 1: endpoints(text); break;
    default: base64(text); break;
  }
  return 0;
}
