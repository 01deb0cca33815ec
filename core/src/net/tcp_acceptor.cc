#include "net/tcp_acceptor.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

namespace chorus::detail {

namespace {

// Longer than any hello: a stranger's stream is not buffered without bound.
constexpr size_t kMaxHandshakeBytes = 2048;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

int millis_until(Deadline t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

// The handshake's few bytes always fit a fresh socket's buffer.
bool send_now(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(bytes.size());
}

}  // namespace

HandshakeAcceptor::HandshakeAcceptor(const Socket& listener, const TcpAuth& auth, HandshakePurpose purpose, int rank,
                                     uint64_t mesh_key)
    : listener_(listener),
      auth_(auth),
      purpose_(purpose),
      rank_(rank),
      mesh_key_(mesh_key),
      key_(handshake_key(auth.secret)) {}

Status HandshakeAcceptor::next(Deadline deadline, ProvenConnection* out) {
  for (;;) {
    if (!proven_.empty()) {
      *out = std::move(proven_.front());
      proven_.pop_front();
      return Status::ok();
    }
    expire();
    Deadline wake = deadline;
    std::vector<pollfd> fds = {{listener_.fd(), POLLIN, 0}};
    for (const Pending& p : pending_) {
      fds.push_back({p.socket.fd(), POLLIN, 0});
      wake = std::min(wake, p.until);
    }
    const int rc = ::poll(fds.data(), fds.size(), millis_until(wake));
    if (rc < 0 && errno != EINTR) return Status::unknown_error(std::string("poll: ") + std::strerror(errno));
    // Pending connections first (their indices are fds[1..]), then new ones.
    for (size_t i = 1; rc > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_from(pending_[i - 1]);
    }
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return !p.socket.valid(); }),
                   pending_.end());
    if (rc > 0 && (fds[0].revents & POLLIN)) accept_waiting();
    if (proven_.empty() && Clock::now() >= deadline) return Status::timeout("no connection came in time");
  }
}

// Takes every connection waiting in the backlog; past the cap the oldest
// unproven one makes room (a rank of the job proves itself in one round trip).
void HandshakeAcceptor::accept_waiting() {
  for (;;) {
    pollfd waiting{listener_.fd(), POLLIN, 0};  // the listener may block: accept only what is there
    if (::poll(&waiting, 1, 0) <= 0) return;
    Socket s(::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!s.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EMFILE/ENFILE: free one descriptor for the next round, or let others free some.
      if ((errno == EMFILE || errno == ENFILE) && !pending_.empty()) {
        refuse(pending_.front(), "closed unproven: this process ran out of file descriptors", false);
        pending_.pop_front();
      } else if (errno == EMFILE || errno == ENFILE) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return;
    }
    if (pending_.size() >= kMaxPending) {
      std::ostringstream why;
      why << "closed unproven: more than " << kMaxPending << " connections were proving themselves at once";
      refuse(pending_.front(), why.str(), false);
      pending_.pop_front();
    }
    Pending p;
    p.address = peer_address(s.fd());
    p.socket = std::move(s);
    p.until = Clock::now() + seconds(auth_.handshake_timeout_seconds);
    pending_.push_back(std::move(p));
  }
}

void HandshakeAcceptor::refuse(Pending& p, const std::string& why, bool tell) {
  if (tell) send_now(p.socket.fd(), std::string(1, static_cast<char>(kRefused)));
  p.socket.reset();
  ++refused_;
  if (auth_.report && reported_.insert(p.address).second) {
    auth_.report("refused a connection from " + p.address + ": " + why +
                 " (further refusals of this address are not reported)");
  }
}

void HandshakeAcceptor::read_from(Pending& p) {
  char buffer[512];
  const ssize_t k = ::recv(p.socket.fd(), buffer, sizeof buffer, MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (k <= 0) return refuse(p, "it closed the connection before proving itself", false);
  p.in.append(buffer, static_cast<size_t>(k));
  if (p.in.size() > kMaxHandshakeBytes) return refuse(p, "it sent more than a handshake", false);
  if (p.challenged) return on_proof(p);
  on_hello(p);
}

void HandshakeAcceptor::on_hello(Pending& p) {
  const Decoded d = decode_hello(p.in, &p.nc, &p.claim);
  if (d == Decoded::kNeedMore) return;
  if (d == Decoded::kBad) return refuse(p, "it sent bytes that are not a Chorus handshake", false);
  if (p.claim.purpose != purpose_ || p.claim.to != rank_ || p.claim.mesh_key != mesh_key_) {
    return refuse(p, "its claim is for another connection (another mesh or rank, or another job)", true);
  }
  Status s = fresh_nonce(&p.ns);
  std::string challenge(1, static_cast<char>(kChallenge));
  challenge.append(reinterpret_cast<const char*>(p.ns.data()), p.ns.size());
  if (!s.is_ok() || !send_now(p.socket.fd(), challenge)) return refuse(p, "the challenge could not be sent", false);
  p.in.clear();
  p.challenged = true;
}

void HandshakeAcceptor::on_proof(Pending& p) {
  if (p.in.size() < kMacBytes) return;
  if (p.in.size() > kMacBytes) return refuse(p, "it sent more than a handshake", false);
  const auto* got = reinterpret_cast<const uint8_t*>(p.in.data());
  if (!mac_matches(handshake_mac(key_, 'C', p.nc, p.ns, p.claim), got)) {
    return refuse(p,
                  "it claimed rank " + std::to_string(p.claim.from) +
                      " but failed the proof of the job's secret (no secret or another one: not a process of "
                      "this job)",
                  true);
  }
  const Mac ours = handshake_mac(key_, 'S', p.nc, p.ns, p.claim);
  std::string accepted(1, static_cast<char>(kAccepted));
  accepted.append(reinterpret_cast<const char*>(ours.data()), ours.size());
  if (!send_now(p.socket.fd(), accepted)) return refuse(p, "the acceptance could not be sent", false);
  proven_.push_back({std::move(p.socket), p.claim, p.address});
}

void HandshakeAcceptor::expire() {
  const Deadline now = Clock::now();
  for (Pending& p : pending_) {
    if (p.until > now) continue;
    std::ostringstream why;
    why << "it did not prove itself within " << auth_.handshake_timeout_seconds
        << " s (CHORUS_HANDSHAKE_TIMEOUT_SECONDS)";
    refuse(p, why.str(), false);
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return !p.socket.valid(); }),
                 pending_.end());
}

}  // namespace chorus::detail
