#pragma once
// Minimal binary writer/reader for control messages. Fixed-width
// little-endian fields (every supported host is little-endian), strings and
// vectors length-prefixed. The reader fails cleanly on truncated input.

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace chorus::detail {

class WireWriter {
 public:
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(&bytes_[at], &value, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes_.append(s);
  }
  void put_int64s(const std::vector<int64_t>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) put(x);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(const std::string& bytes) : data_(bytes.data()), left_(bytes.size()) {}
  template <class T>
  bool get(T* out) {
    if (left_ < sizeof(T)) return fail();
    std::memcpy(out, data_, sizeof(T));
    data_ += sizeof(T);
    left_ -= sizeof(T);
    return true;
  }
  bool get_string(std::string* out) {
    uint32_t n;
    if (!get(&n) || left_ < n) return fail();
    out->assign(data_, n);
    data_ += n;
    left_ -= n;
    return true;
  }
  bool get_int64s(std::vector<int64_t>* out) {
    uint32_t n;
    if (!get(&n) || left_ / sizeof(int64_t) < n) return fail();
    out->resize(n);
    for (auto& x : *out) get(&x);
    return true;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return left_ == 0; }

 private:
  bool fail() {
    ok_ = false;
    left_ = 0;
    return false;
  }
  const char* data_;
  size_t left_;
  bool ok_ = true;
};

}  // namespace chorus::detail
