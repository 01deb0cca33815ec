#pragma once
// The few messages of the rendezvous and of a mesh's connections, bounded
// by deadlines: length-prefixed text, and a mesh connection's opening
// (magic, rank, mesh key).

#include <cstdint>
#include <cstring>
#include <string>

#include "chorus/status.h"
#include "comm/tcp/tcp_socket.h"

namespace chorus::detail {

inline Status send_text(int fd, const std::string& text, Deadline deadline) {
  const auto n = static_cast<uint32_t>(text.size());
  Status s = send_exactly(fd, &n, sizeof n, deadline);
  return s.is_ok() ? send_exactly(fd, text.data(), text.size(), deadline) : s;
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

inline Status send_mesh_hello(int fd, uint32_t magic, int rank, uint64_t key, Deadline deadline) {
  char hello[16];
  const auto r = static_cast<int32_t>(rank);
  std::memcpy(hello, &magic, 4);
  std::memcpy(hello + 4, &r, 4);
  std::memcpy(hello + 8, &key, 8);
  return send_exactly(fd, hello, sizeof hello, deadline);
}

/// The rank of a connection that opened with `magic` and `key`; an error otherwise.
inline Status recv_mesh_hello(int fd, uint32_t magic, uint64_t key, Deadline deadline, int* rank) {
  char hello[16];
  Status s = recv_exactly(fd, hello, sizeof hello, deadline);
  if (!s.is_ok()) return s;
  uint32_t m = 0;
  int32_t r = 0;
  uint64_t k = 0;
  std::memcpy(&m, hello, 4);
  std::memcpy(&r, hello + 4, 4);
  std::memcpy(&k, hello + 8, 8);
  if (m != magic || k != key) return Status::invalid_argument("a connection from another job or program");
  *rank = r;
  return Status::ok();
}

}  // namespace chorus::detail
