#pragma once
// The rendezvous's messages, bounded by deadlines: length-prefixed text
// (a connection's opening proof: net/tcp_handshake.h).

#include <cstdint>
#include <string>

#include "chorus/status.h"
#include "net/tcp_socket.h"

namespace chorus::detail {

// One write: after the handshake's exchanges a second small write would wait
// for the peer's delayed ACK (Nagle), 40 ms a message.
inline Status send_text(int fd, const std::string& text, Deadline deadline) {
  const auto n = static_cast<uint32_t>(text.size());
  std::string framed(reinterpret_cast<const char*>(&n), sizeof n);
  framed += text;
  return send_exactly(fd, framed.data(), framed.size(), deadline);
}

/// A text of at most `max_bytes` (longer: not one of ours).
inline Status recv_text(int fd, uint32_t max_bytes, Deadline deadline, std::string* text) {
  uint32_t n = 0;
  Status s = recv_exactly(fd, &n, sizeof n, deadline);
  if (!s.is_ok()) return s;
  if (n > max_bytes) return Status::invalid_argument("message of " + std::to_string(n) + " bytes");
  text->assign(n, '\0');
  return recv_exactly(fd, text->data(), n, deadline);
}

}  // namespace chorus::detail
