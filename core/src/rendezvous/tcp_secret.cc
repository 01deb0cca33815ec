#include "rendezvous/tcp_secret.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/env_params.h"
#include "common/knob_registry.h"

namespace chorus::detail {

namespace {

constexpr size_t kMaxSecretFileBytes = 4096;

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The knob's value from the environment, checked by its registry row.
Status knob_text(const char* name, std::string* value, bool* set) {
  std::string var;
  auto v = read_env(name, &var);
  *set = v.has_value();
  if (!v) return Status::ok();
  const Knob* k = find_knob(name);
  RuntimeOptions scratch;
  Status fits = k->apply(*k, *v, &scratch);
  if (!fits.is_ok()) return Status::invalid_argument(var + " is not valid: " + fits.message());
  *value = *v;
  return Status::ok();
}

}  // namespace

Status read_secret_file(const std::string& path, std::string* secret) {
  const std::string what = "CHORUS_SECRET_FILE '" + path + "'";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Status::invalid_argument(what + " cannot be read: " + std::strerror(errno));
  struct stat st {};
  std::string text;
  Status s;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    s = Status::invalid_argument(what + " is not a regular file");
  } else if ((st.st_mode & 077) != 0) {
    s = Status::invalid_argument(what + " has mode " + mode_text(st.st_mode) +
                                 ": its group or others may read it; allow its owner only (chmod 600 '" + path + "')");
  } else {
    char buffer[kMaxSecretFileBytes + 1];
    ssize_t n = 0, k = 0;
    while ((k = ::read(fd, buffer + n, sizeof buffer - static_cast<size_t>(n))) > 0) n += k;
    text.assign(buffer, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (k < 0) s = Status::invalid_argument(what + " cannot be read: " + std::strerror(errno));
    if (s.is_ok() && text.size() > kMaxSecretFileBytes) s = Status::invalid_argument(what + " is too long");
  }
  ::close(fd);
  if (!s.is_ok()) return s;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.empty()) return Status::invalid_argument(what + " is empty");
  *secret = std::move(text);
  return Status::ok();
}

bool is_loopback_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (host.empty() || getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return false;
  bool loopback = true;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loopback = loopback && (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      loopback = loopback && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    } else {
      loopback = false;
    }
  }
  freeaddrinfo(found);
  return loopback;
}

Status tcp_auth_from_environment(const TcpJobSpec& spec, TcpAuth* auth, std::string* warning) {
  warning->clear();
  std::string secret, file, require_text, timeout_text;
  bool has_secret = false, has_file = false, has_require = false, has_timeout = false;
  Status s = knob_text("SECRET", &secret, &has_secret);
  if (s.is_ok()) s = knob_text("SECRET_FILE", &file, &has_file);
  if (s.is_ok()) s = knob_text("REQUIRE_SECRET", &require_text, &has_require);
  if (s.is_ok()) s = knob_text("HANDSHAKE_TIMEOUT_SECONDS", &timeout_text, &has_timeout);
  if (!s.is_ok()) return s;
  if (has_timeout) auth->handshake_timeout_seconds = std::strtod(timeout_text.c_str(), nullptr);
  // chorusrun's CHORUS_SECRET wins over a file named in the user's shell.
  if (!has_secret && has_file) s = read_secret_file(file, &secret);
  if (!s.is_ok()) return s;
  auth->secret = secret;
  if (!secret.empty() || spec.size <= 1) return Status::ok();
  const bool required =
      has_require && (require_text == "1" || require_text == "true" || require_text == "yes" || require_text == "on");
  if (required) {
    return Status::precondition_error("CHORUS_REQUIRE_SECRET is on but rank " + std::to_string(spec.rank) +
                                      " has no secret: set CHORUS_SECRET_FILE (a file only its owner may read) or "
                                      "CHORUS_SECRET on every rank, or start the job with chorusrun");
  }
  if (spec.rank == 0 && !is_loopback_host(spec.master_addr)) {
    *warning = "this job has no secret: any process that reaches port " + std::to_string(spec.master_port) + " of " +
               spec.master_addr +
               " can join it as a rank; set CHORUS_SECRET_FILE (a file only its owner may read) or CHORUS_SECRET "
               "on every rank, or start the job with chorusrun (docs/security.md)";
  }
  return Status::ok();
}

}  // namespace chorus::detail
