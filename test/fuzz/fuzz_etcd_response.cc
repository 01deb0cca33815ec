// Fuzz target: what the etcd client reads from the network (rendezvous/
// etcd_client.h, etcd_json.h): the HTTP/1.1 response, the JSON of its body,
// a range's key-values in base64. The first byte picks where the bytes go
// in. Properties: a response the reader calls whole is never called bad
// when only a prefix of it had arrived (it would drop an answer that came
// in pieces); every string the JSON reader returns comes back unchanged
// through json_quote; base64 that decodes re-encodes to the same bytes.
#include <cstdint>

#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_json.h"
#include "fuzz_check.h"

using namespace chorus::detail;

namespace {

void check_strings(const JsonValue& v, int budget) {
  if (budget <= 0) return;
  if (v.kind == JsonValue::Kind::kString) {
    JsonValue back;
    FUZZ_CHECK(parse_json(json_quote(v.text), &back).is_ok());
    FUZZ_CHECK(back.kind == JsonValue::Kind::kString && back.text == v.text);
  }
  for (const JsonValue& item : v.items) check_strings(item, budget - 1);
  for (const auto& [name, field] : v.fields) {
    JsonValue back;
    FUZZ_CHECK(parse_json(json_quote(name), &back).is_ok() && back.text == name);
    check_strings(field, budget - 1);
  }
}

void json(const std::string& text) {
  JsonValue v;
  if (!parse_json(text, &v).is_ok()) return;
  check_strings(v, 8);
  std::vector<EtcdKeyValue> kvs;
  if (etcd_key_values(v, &kvs).is_ok()) {
    for (const EtcdKeyValue& kv : kvs) FUZZ_CHECK(kv.key.size() <= text.size() && kv.value.size() <= text.size());
  }
}

void http(const std::string& bytes) {
  HttpResponse r;
  std::string why;
  if (parse_http_response(bytes, &r, &why) != HttpParse::kDone) return;
  FUZZ_CHECK(r.status >= 100 && r.status <= 999);
  FUZZ_CHECK(r.body.size() <= bytes.size());
  for (size_t cut : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    HttpResponse partial;
    FUZZ_CHECK(parse_http_response(bytes.substr(0, cut), &partial, &why) != HttpParse::kBad);
  }
  json(r.body);
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
    case 0: http(text); break;
    case 1: json(text); break;
    default: base64(text); break;
  }
  return 0;
}
