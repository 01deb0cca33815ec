#include "comm/tcp/tcp_gone_notice.h"

#include <algorithm>
#include <cstring>

namespace chorus::detail {

std::string encode_gone_notice(const std::vector<int>& lost, const std::string& why) {
  std::string payload(4 + lost.size() * 4, '\0');
  const auto count = static_cast<uint32_t>(lost.size());
  std::memcpy(&payload[0], &count, 4);
  for (size_t i = 0; i < lost.size(); ++i) {
    const auto r = static_cast<int32_t>(lost[i]);
    std::memcpy(&payload[4 + i * 4], &r, 4);
  }
  return payload + why;
}

GoneNotice decode_gone_notice(const std::string& payload, int size, int self) {
  GoneNotice notice;
  uint32_t count = 0;
  if (payload.size() < 4) return notice;
  std::memcpy(&count, payload.data(), 4);
  if (count > (payload.size() - 4) / 4) return notice;
  for (size_t i = 0; i < count; ++i) {
    int32_t r = 0;
    std::memcpy(&r, payload.data() + 4 + i * 4, 4);
    const bool known = std::find(notice.lost.begin(), notice.lost.end(), r) != notice.lost.end();
    if (r >= 0 && r < size && r != self && !known) notice.lost.push_back(r);
  }
  if (count > 0) notice.why = payload.substr(4 + size_t{count} * 4, kLongestGoneReason);
  return notice;
}

}  // namespace chorus::detail
