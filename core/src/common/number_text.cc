#include "common/number_text.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace chorus::detail {

namespace {

bool digits(const std::string& text, size_t from) {
  return text.size() > from && std::all_of(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(),
                                           [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool whole_number(const std::string& text, int64_t lowest, int64_t highest, int64_t* out) {
  if (!digits(text, !text.empty() && text[0] == '-' ? 1 : 0)) return false;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno != 0 || v < lowest || v > highest) return false;
  *out = v;
  return true;
}

bool whole_unsigned(const std::string& text, uint64_t* out) {
  if (!digits(text, 0)) return false;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *out = v;
  return true;
}

}  // namespace chorus::detail
