// The JSON reader and writer and base64 of rendezvous/etcd_json.h: a
// recursive-descent reader over the text, OpenSSL's base64.
#include "rendezvous/etcd_json.h"

#include <openssl/evp.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace chorus::detail {

namespace {

constexpr int kMaxDepth = 64;

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : t_(text) {}

  Status document(JsonValue* out) {
    if (!value(out, 0)) return error();
    skip_space();
    if (i_ != t_.size()) return fail("text after the document");
    return Status::ok();
  }

 private:
  bool value(JsonValue* out, int depth);
  bool object(JsonValue* out, int depth);
  bool array(JsonValue* out, int depth);
  bool string(std::string* out);
  bool escape(std::string* out);
  bool hex4(uint32_t* out);
  bool word(JsonValue* out, JsonValue::Kind kind, const char* spelling);
  bool number(JsonValue* out);

  void skip_space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool take(char c) {
    skip_space();
    if (i_ < t_.size() && t_[i_] == c) return ++i_, true;
    return false;
  }
  Status fail(const std::string& what) {
    return Status::invalid_argument("not JSON: " + what + " at byte " + std::to_string(i_));
  }
  Status error() { return fail(why_.empty() ? "unexpected text" : why_); }
  bool wrong(const char* why) {
    if (why_.empty()) why_ = why;
    return false;
  }

  const std::string& t_;
  size_t i_ = 0;
  std::string why_;
};

bool JsonReader::value(JsonValue* out, int depth) {
  if (depth > kMaxDepth) return wrong("nested too deep");
  skip_space();
  if (i_ >= t_.size()) return wrong("the text ended");
  const char c = t_[i_];
  if (c == '{') return object(out, depth);
  if (c == '[') return array(out, depth);
  if (c == '"') {
    out->kind = JsonValue::Kind::kString;
    return string(&out->text);
  }
  if (c == 't') return word(out, JsonValue::Kind::kBool, "true");
  if (c == 'f') return word(out, JsonValue::Kind::kBool, "false");
  if (c == 'n') return word(out, JsonValue::Kind::kNull, "null");
  return number(out);
}

bool JsonReader::object(JsonValue* out, int depth) {
  out->kind = JsonValue::Kind::kObject;
  ++i_;  // '{'
  if (take('}')) return true;
  do {
    skip_space();
    std::pair<std::string, JsonValue> field;
    if (i_ >= t_.size() || t_[i_] != '"' || !string(&field.first)) return wrong("expected a field name");
    if (!take(':')) return wrong("expected ':'");
    if (!value(&field.second, depth + 1)) return false;
    out->fields.push_back(std::move(field));
  } while (take(','));
  return take('}') || wrong("expected ',' or '}'");
}

bool JsonReader::array(JsonValue* out, int depth) {
  out->kind = JsonValue::Kind::kArray;
  ++i_;  // '['
  if (take(']')) return true;
  do {
    JsonValue item;
    if (!value(&item, depth + 1)) return false;
    out->items.push_back(std::move(item));
  } while (take(','));
  return take(']') || wrong("expected ',' or ']'");
}

bool JsonReader::string(std::string* out) {
  ++i_;  // '"'
  while (i_ < t_.size()) {
    const char c = t_[i_++];
    if (c == '"') return true;
    if (static_cast<unsigned char>(c) < 0x20) return wrong("a control character in a string");
    if (c != '\\') {
      out->push_back(c);
    } else if (!escape(out)) {
      return false;
    }
  }
  return wrong("a string never ended");
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool JsonReader::escape(std::string* out) {
  if (i_ >= t_.size()) return wrong("a string never ended");
  const char c = t_[i_++];
  switch (c) {
    case '"': out->push_back('"'); return true;
    case '\\': out->push_back('\\'); return true;
    case '/': out->push_back('/'); return true;
    case 'b': out->push_back('\b'); return true;
    case 'f': out->push_back('\f'); return true;
    case 'n': out->push_back('\n'); return true;
    case 'r': out->push_back('\r'); return true;
    case 't': out->push_back('\t'); return true;
    case 'u': break;
    default: return wrong("a bad escape in a string");
  }
  uint32_t cp = 0;
  if (!hex4(&cp)) return false;
  if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate: its low half follows
    uint32_t low = 0;
    if (t_.compare(i_, 2, "\\u") != 0) return wrong("a lone surrogate in a string");
    i_ += 2;
    if (!hex4(&low) || low < 0xDC00 || low > 0xDFFF) return wrong("a lone surrogate in a string");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
    return wrong("a lone surrogate in a string");
  }
  append_utf8(cp, out);
  return true;
}

bool JsonReader::hex4(uint32_t* out) {
  if (i_ + 4 > t_.size()) return wrong("a short \\u escape");
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    const char c = t_[i_++];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return wrong("a bad \\u escape");
    v = v * 16 + static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

bool JsonReader::word(JsonValue* out, JsonValue::Kind kind, const char* spelling) {
  const std::string w(spelling);
  if (t_.compare(i_, w.size(), w) != 0) return wrong("unexpected text");
  i_ += w.size();
  out->kind = kind;
  out->text = w;
  return true;
}

bool JsonReader::number(JsonValue* out) {
  const size_t from = i_;
  while (i_ < t_.size() && std::string("+-0123456789.eE").find(t_[i_]) != std::string::npos) ++i_;
  if (i_ == from) return wrong("unexpected text");
  out->kind = JsonValue::Kind::kNumber;
  out->text = t_.substr(from, i_ - from);
  return true;
}

}  // namespace

const JsonValue* JsonValue::get(const std::string& name) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& [n, v] : fields) {
    if (n == name) return &v;
  }
  return nullptr;
}

int64_t JsonValue::as_int(const JsonValue* v, int64_t fallback) {
  if (v == nullptr || (v->kind != Kind::kNumber && v->kind != Kind::kString) || v->text.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v->text.c_str(), &end, 10);
  return errno != 0 || *end != '\0' ? fallback : n;
}

std::string JsonValue::as_string(const JsonValue* v) {
  return v != nullptr && v->kind == Kind::kString ? v->text : std::string();
}

Status parse_json(const std::string& text, JsonValue* out) {
  *out = JsonValue();
  return JsonReader(text).document(out);
}

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
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
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t pad = 0;  // EVP_DecodeBlock counts the padding's zero bytes
  if (text[text.size() - 1] == '=') ++pad;
  if (text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  *bytes = std::move(out);
  return true;
}

}  // namespace chorus::detail
