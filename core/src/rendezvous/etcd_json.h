#pragma once
// The little JSON and base64 that etcd's HTTP gateway needs (rendezvous/
// etcd_client.h): etcd v3 speaks gRPC, and its gateway takes and returns
// the same messages as JSON, keys and values in base64. Pure functions,
// unit-tested (test/rendezvous/test_etcd_rendezvous.cc).
//
// The JSON reader is purpose-built, not a general library: it reads one
// document of objects, arrays, strings, numbers, true/false/null into a
// tree, keeps numbers as their text (etcd sends its int64 fields as strings
// anyway), decodes \uXXXX escapes (surrogate pairs too) to UTF-8, refuses
// nesting deeper than 64 and anything after the document. It does not
// check that a number is well formed beyond its characters, nor that
// strings are valid UTF-8, nor duplicate names (the first wins).
// Base64 is OpenSSL's (EVP_EncodeBlock/EVP_DecodeBlock), standard alphabet
// with padding, as etcd's gateway writes it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chorus/status.h"

namespace chorus::detail {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  std::string text;                                       // a string's content, a number's or bool's spelling
  std::vector<JsonValue> items;                           // an array's
  std::vector<std::pair<std::string, JsonValue>> fields;  // an object's, in order

  /// The field `name` of an object; nullptr when absent or not an object.
  const JsonValue* get(const std::string& name) const;
  /// A number, or a string holding one (etcd's int64 fields); `fallback`
  /// for anything else, an absent value (nullptr) included.
  static int64_t as_int(const JsonValue* v, int64_t fallback = 0);
  /// A string's content; "" for anything else.
  static std::string as_string(const JsonValue* v);
};

/// Parses one JSON document; an error says what and where (the byte offset).
Status parse_json(const std::string& text, JsonValue* out);

/// `text` as a JSON string literal, quotes included.
std::string json_quote(const std::string& text);

std::string base64_encode(const std::string& bytes);
/// False for text that is not base64 (length not a multiple of 4, other characters).
bool base64_decode(const std::string& text, std::string* bytes);

}  // namespace chorus::detail
