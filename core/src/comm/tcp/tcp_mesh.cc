#include "comm/tcp/tcp_mesh.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "comm/tcp/tcp_gone_notice.h"
#include "common/rank_text.h"

namespace chorus::detail {

namespace {

constexpr size_t kHeaderBytes = 16;
// A frame longer than this is no frame of ours (a stray connection, a
// corrupt stream): an error rather than an allocation of that size.
constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 40;
// Bytes one read_some() takes from a socket before it lets the caller
// write and look at what arrived: a peer that streams a large transfer
// must not hold this thread in its reads while its own sends wait.
constexpr size_t kReadBudgetBytes = size_t{2} << 20;

}  // namespace

TcpMesh::TcpMesh(int rank, std::vector<Socket> links, double peer_timeout_seconds)
    : rank_(rank), peer_timeout_seconds_(peer_timeout_seconds), peers_(links.size()) {
  for (size_t r = 0; r < links.size(); ++r) {
    peers_[r].socket = std::move(links[r]);
    if (peers_[r].socket.valid()) tune_peer_socket(peers_[r].socket.fd(), peer_timeout_seconds);
  }
}

Status TcpMesh::fail(Status status) {
  if (failure_.is_ok()) {
    failure_ = std::move(status);
    drop_borrowed();
  }
  return failure_;
}

// The mesh broke: the callers give up on their sends and free that memory,
// while close() still writes what is queued (the news of the loss). The
// frame under way keeps going, its bytes copied; the callers' frames not
// begun are dropped whole.
void TcpMesh::drop_borrowed() {
  for (Peer& p : peers_) {
    std::deque<Outgoing> kept;
    for (size_t i = 0; i < p.out.size(); ++i) {
      Outgoing piece = p.out[i];
      const bool has_payload = piece.header && i + 1 < p.out.size() && !p.out[i + 1].header;
      const bool under_way = i == 0 || (i == 1 && p.out[0].header);
      if (!under_way && has_payload && !p.out[i + 1].owned) {
        ++i;  // a caller's frame not begun: header and payload
        continue;
      }
      if (!piece.owned) {
        piece.owned = std::make_shared<const std::string>(piece.data, piece.left);
        piece.data = piece.owned->data();
      }
      kept.push_back(std::move(piece));
    }
    p.out = std::move(kept);
  }
}

void TcpMesh::enqueue(int peer, TcpChannel channel, uint32_t tag, std::shared_ptr<const std::string> owned,
                      const void* data, int64_t bytes, Ticket ticket) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  auto header = std::make_shared<std::string>(kHeaderBytes, '\0');
  const auto ch = static_cast<uint32_t>(channel);
  const auto n = static_cast<uint64_t>(bytes);
  std::memcpy(&(*header)[0], &ch, 4);
  std::memcpy(&(*header)[4], &tag, 4);
  std::memcpy(&(*header)[8], &n, 8);
  p.out.push_back({header, header->data(), header->size(), bytes == 0 ? ticket : 0, true});
  if (bytes > 0) {
    const char* from = owned ? owned->data() : static_cast<const char*>(data);
    p.out.push_back({std::move(owned), from, static_cast<size_t>(bytes), ticket});
  }
  if (ticket != 0) pending_[ticket] = false;
}

Status TcpMesh::queue(int peer, TcpChannel channel, uint32_t tag, std::shared_ptr<const std::string> owned,
                      const void* data, int64_t bytes, Ticket ticket) {
  if (!failure_.is_ok()) return failure_;
  if (peer < 0 || peer >= size() || peer == rank_) {
    return Status::invalid_argument("rank " + std::to_string(rank_) + " cannot send to rank " + std::to_string(peer));
  }
  enqueue(peer, channel, tag, std::move(owned), data, bytes, ticket);
  Status s = write_some(peer);  // most frames go out at once
  return lost_.empty() ? s : settle_losses();
}

Status TcpMesh::send(int peer, TcpChannel channel, uint32_t tag, const void* data, int64_t bytes, Ticket* ticket) {
  *ticket = next_ticket_++;
  return queue(peer, channel, tag, nullptr, data, bytes, *ticket);
}

Status TcpMesh::send_owned(int peer, TcpChannel channel, uint32_t tag, std::shared_ptr<const std::string> bytes) {
  const auto n = static_cast<int64_t>(bytes->size());
  return queue(peer, channel, tag, std::move(bytes), nullptr, n, 0);
}

Status TcpMesh::receive(int peer, TcpChannel channel, uint32_t tag, void* data, int64_t bytes, Ticket* ticket) {
  if (!failure_.is_ok()) return failure_;
  if (peer < 0 || peer >= size() || peer == rank_) {
    return Status::invalid_argument("rank " + std::to_string(rank_) + " cannot receive from rank " +
                                    std::to_string(peer));
  }
  *ticket = next_ticket_++;
  const Key key{peer, static_cast<uint32_t>(channel), tag};
  auto early = unmatched_.find(key);
  if (early != unmatched_.end() && !early->second.empty()) {  // it already came
    std::string message = std::move(early->second.front());
    early->second.pop_front();
    Status s = check_size(peer, tag, bytes, message.size());
    if (!s.is_ok()) return s;
    if (bytes > 0) std::memcpy(data, message.data(), message.size());
    pending_[*ticket] = true;
    return Status::ok();
  }
  pending_[*ticket] = false;
  auto& waiting = posted_[key];
  if (waiting.empty()) {  // else an earlier receive takes the frame under way
    bool taken = false;
    Status s = take_over_frame(peer, key, static_cast<char*>(data), bytes, *ticket, &taken);
    if (!s.is_ok() || taken) return s;
  }
  waiting.push_back({static_cast<char*>(data), bytes, *ticket});
  return Status::ok();
}

// The frame for `key` is arriving now, into the mesh's own memory: what came
// is copied, and the rest lands straight in `data`.
Status TcpMesh::take_over_frame(int peer, const Key& key, char* data, int64_t bytes, Ticket ticket, bool* taken) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  const bool arriving = p.header_got == kHeaderBytes && p.target_ticket == 0 && p.target != nullptr;
  if (!arriving || Key{peer, p.channel, p.tag} != key) return Status::ok();
  Status s = check_size(peer, p.tag, bytes, p.inbound.size());
  if (!s.is_ok()) return s;
  *taken = true;
  const size_t got = p.inbound.size() - p.target_left;
  std::memcpy(data, p.inbound.data(), got);
  p.target = data + got;
  p.target_ticket = ticket;
  bytes_kept_aside_ -= static_cast<int64_t>(p.target_left);
  p.inbound = std::string();
  return Status::ok();
}

Status TcpMesh::wait(Ticket ticket) {
  for (;;) {
    auto it = pending_.find(ticket);
    if (it == pending_.end()) return Status::invalid_argument("unknown transfer " + std::to_string(ticket));
    if (it->second) {
      pending_.erase(it);
      return Status::ok();
    }
    Status s = progress(100);
    // The same read can bring the transfer's last bytes and, right after
    // them, its peer's end of stream: the transfer is complete all the same
    // (the loss fails whatever comes next).
    if (!s.is_ok() && !pending_[ticket]) return s;
  }
}

bool TcpMesh::take_control(int* from, std::string* bytes) {
  if (control_.empty()) progress(0);
  if (control_.empty()) return false;
  if (from) *from = control_.front().first;
  *bytes = std::move(control_.front().second);
  control_.pop_front();
  return true;
}

Status TcpMesh::progress(int wait_ms) {
  if (!failure_.is_ok()) return failure_;
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (size_t r = 0; r < peers_.size(); ++r) {
    const Peer& p = peers_[r];
    if (!p.socket.valid()) continue;
    fds.push_back({p.socket.fd(), static_cast<short>(POLLIN | (p.out.empty() ? 0 : POLLOUT)), 0});
    ranks.push_back(static_cast<int>(r));
  }
  if (fds.empty()) return Status::ok();
  const int rc = ::poll(fds.data(), fds.size(), wait_ms);
  if (rc < 0 && errno != EINTR) return fail(Status::unknown_error(std::string("poll: ") + std::strerror(errno)));
  for (size_t i = 0; rc > 0 && i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Status s = (fds[i].revents & POLLOUT) ? write_some(ranks[i]) : Status::ok();
    // Read on errors and hangups too: recv says which it was, after the last data.
    if (s.is_ok() && (fds[i].revents & (POLLIN | POLLERR | POLLHUP))) s = read_some(ranks[i]);
    if (!s.is_ok() && lost_.empty()) return s;  // not a lost peer: corrupt or unexpected data
  }
  if (liveness_timeout_seconds_ > 0) keep_alive();
  return settle_losses();
}

// One sendmsg for as many queued pieces as it takes: a header and its
// payload leave in one segment, not two (the receiver wakes once).
Status TcpMesh::write_some(int peer) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  constexpr size_t kMaxPieces = 64;
  while (!p.out.empty()) {
    iovec pieces[kMaxPieces];
    size_t count = 0;
    for (auto it = p.out.begin(); it != p.out.end() && count < kMaxPieces; ++it) {
      pieces[count++] = {const_cast<char*>(it->data), it->left};
    }
    msghdr message{};
    message.msg_iov = pieces;
    message.msg_iovlen = count;
    ssize_t k = ::sendmsg(p.socket.fd(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
      if (p.closing) return Status::ok();
      return errno == EPIPE || errno == ECONNRESET ? peer_error(peer, "") : peer_error(peer, std::strerror(errno));
    }
    p.sent += static_cast<uint64_t>(k);
    while (!p.out.empty() && static_cast<size_t>(k) >= p.out.front().left) {  // whole pieces sent
      k -= static_cast<ssize_t>(p.out.front().left);
      if (p.out.front().ticket != 0) pending_[p.out.front().ticket] = true;
      p.out.pop_front();
    }
    if (k > 0) {  // part of the next piece: the socket is full
      p.out.front().data += k;
      p.out.front().left -= static_cast<size_t>(k);
      return Status::ok();
    }
  }
  return Status::ok();
}

// Reads until the socket is empty, the budget is spent, or a frame that no
// receive was posted for ended (a control message, a frame kept aside): the
// caller acts on it first, and what follows stays in the socket until then,
// so a receive posted meanwhile gets it in place instead of in a copy.
Status TcpMesh::read_some(int peer) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  for (size_t budget = kReadBudgetBytes; budget > 0;) {
    const bool in_header = p.header_got < kHeaderBytes;
    char* into = in_header ? p.header + p.header_got : p.target;
    const size_t want = in_header ? kHeaderBytes - p.header_got : std::min(p.target_left, budget);
    const ssize_t k = ::recv(p.socket.fd(), into, want, MSG_DONTWAIT);
    if (k == 0) {
      if (p.closing && in_header && p.header_got == 0) {  // expected after its close frame
        p.socket.reset();
        return Status::ok();
      }
      return peer_error(peer, "");
    }
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
      if (p.closing) {
        p.socket.reset();
        return Status::ok();
      }
      return errno == ECONNRESET ? peer_error(peer, "") : peer_error(peer, std::strerror(errno));
    }
    p.heard += static_cast<uint64_t>(k);
    budget -= std::min(budget, static_cast<size_t>(k));
    const bool kept_aside = p.target_ticket == 0;  // the payload under way goes to no posted receive
    bool ended = false;
    Status s;
    if (in_header) {
      p.header_got += static_cast<size_t>(k);
      if (p.header_got == kHeaderBytes) {
        s = begin_frame(peer);
        ended = p.header_got == 0;  // an empty frame ends with its header
      }
    } else {
      p.target += k;
      p.target_left -= static_cast<size_t>(k);
      if (p.target_left == 0) {
        s = end_frame(peer);
        ended = true;
      }
    }
    if (!s.is_ok()) return s;
    if (ended && (in_header || kept_aside)) return Status::ok();  // an empty frame, or one kept aside
  }
  return Status::ok();
}

// A header arrived: decide where its payload goes.
Status TcpMesh::begin_frame(int peer) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  uint64_t bytes = 0;
  std::memcpy(&p.channel, p.header, 4);
  std::memcpy(&p.tag, p.header + 4, 4);
  std::memcpy(&bytes, p.header + 8, 8);
  if (p.channel > static_cast<uint32_t>(TcpChannel::kHeartbeat) || bytes > kMaxFrameBytes) {
    return fail(Status::unknown_error("rank " + std::to_string(rank_) + " got a corrupt frame from rank " +
                                      std::to_string(peer) + " (channel " + std::to_string(p.channel) + ", " +
                                      std::to_string(bytes) + " bytes)"));
  }
  p.target_ticket = 0;
  auto posted = posted_.find(Key{peer, p.channel, p.tag});
  if (posted != posted_.end() && !posted->second.empty()) {
    const Posted r = posted->second.front();
    posted->second.pop_front();
    Status s = check_size(peer, p.tag, r.bytes, bytes);
    if (!s.is_ok()) return s;
    p.target = r.data;  // straight into the caller's memory
    p.target_ticket = r.ticket;
  } else {
    p.inbound.assign(bytes, '\0');
    p.target = p.inbound.data();
    const bool data = p.channel == static_cast<uint32_t>(TcpChannel::kRing) ||
                      p.channel == static_cast<uint32_t>(TcpChannel::kCollective);
    if (data) bytes_kept_aside_ += static_cast<int64_t>(bytes);
  }
  p.target_left = bytes;
  return bytes == 0 ? end_frame(peer) : Status::ok();
}

Status TcpMesh::end_frame(int peer) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  p.header_got = 0;
  Status s;
  if (p.target_ticket != 0) {
    pending_[p.target_ticket] = true;
  } else if (p.channel == static_cast<uint32_t>(TcpChannel::kControl)) {
    control_.emplace_back(peer, std::move(p.inbound));
  } else if (p.channel == static_cast<uint32_t>(TcpChannel::kClose)) {
    p.closing = true;
    ++closes_seen_;
  } else if (p.channel == static_cast<uint32_t>(TcpChannel::kGone)) {
    heard_gone(peer, p.inbound);
  } else if (p.channel == static_cast<uint32_t>(TcpChannel::kHeartbeat)) {
    // Its bytes said what it had to say: the peer runs.
  } else {
    s = deliver(peer, p.channel, p.tag, std::move(p.inbound));
  }
  p.inbound = std::string();
  p.target = nullptr;
  p.target_ticket = 0;
  return s;
}

// A whole frame that no receive was posted for when it began: to the
// receive posted since, or kept until one is.
Status TcpMesh::deliver(int peer, uint32_t channel, uint32_t tag, std::string message) {
  const Key key{peer, channel, tag};
  auto posted = posted_.find(key);
  if (posted == posted_.end() || posted->second.empty()) {
    unmatched_[key].push_back(std::move(message));
    return Status::ok();
  }
  const Posted r = posted->second.front();
  posted->second.pop_front();
  Status s = check_size(peer, tag, r.bytes, message.size());
  if (!s.is_ok()) return s;
  if (r.bytes > 0) std::memcpy(r.data, message.data(), message.size());
  pending_[r.ticket] = true;
  return Status::ok();
}

Status TcpMesh::check_size(int peer, uint32_t tag, int64_t expected, uint64_t got) {
  if (static_cast<uint64_t>(expected) == got) return Status::ok();
  return fail(Status::unknown_error("rank " + std::to_string(rank_) + " expected " + std::to_string(expected) +
                                    " bytes from rank " + std::to_string(peer) + " (tag " + std::to_string(tag) +
                                    ") but got " + std::to_string(got)));
}

std::vector<int> TcpMesh::not_closed() const {
  std::vector<int> out;
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && !peers_[static_cast<size_t>(r)].closing) out.push_back(r);
  }
  return out;
}

bool TcpMesh::close(std::chrono::milliseconds bound) {
  const Deadline deadline = Clock::now() + bound;
  if (!failure_.is_ok()) {  // the loop ended with the error already: only let the news of it out
    flush_before(std::min(deadline, Clock::now() + std::chrono::milliseconds(500)));
    return true;
  }
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && !send_owned(r, TcpChannel::kClose, 0, std::make_shared<const std::string>()).is_ok()) return true;
  }
  auto quiet = [&] {
    for (const Peer& p : peers_) {
      if (!p.out.empty()) return false;
    }
    return closes_seen_ == size() - 1;
  };
  while (!quiet()) {
    if (Clock::now() >= deadline) return false;
    if (!progress(10).is_ok()) return true;
  }
  return true;
}

}  // namespace chorus::detail

// ---- How the mesh breaks ----
//
// How the mesh breaks: which peers are gone, the one error that names them,
// and the news of it to the ranks still connected.
namespace chorus::detail {

// Recorded, not yet the mesh's error: other connections may be ending at
// the same moment (settle_losses).
Status TcpMesh::peer_error(int peer, const std::string& what) {
  if (std::find(lost_.begin(), lost_.end(), peer) == lost_.end()) lost_.push_back(peer);
  if (lost_why_.empty()) lost_why_ = what;
  return Status::aborted("connection lost");
}

// A rank that dies makes the others stop, whose connections then close
// too: the ranks whose connections end within a moment are named together,
// so the one that died first is among them whichever closure came first here.
Status TcpMesh::settle_losses() {
  if (!failure_.is_ok() || lost_.empty()) return failure_;
  const Deadline until = Clock::now() + std::chrono::milliseconds(100);
  while (Clock::now() < until) {
    std::vector<pollfd> fds;
    std::vector<int> ranks;
    for (size_t r = 0; r < peers_.size(); ++r) {
      const bool lost = std::find(lost_.begin(), lost_.end(), static_cast<int>(r)) != lost_.end();
      if (peers_[r].socket.valid() && !lost) {
        fds.push_back({peers_[r].socket.fd(), POLLIN, 0});
        ranks.push_back(static_cast<int>(r));
      }
    }
    if (fds.empty()) break;  // no connection left to end: nothing to wait for
    if (::poll(fds.data(), fds.size(), 10) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_some(ranks[i]);
    }
  }
  std::sort(lost_.begin(), lost_.end());
  const std::string why = why_lost();
  tell_the_others(why);
  return fail(Status::aborted("rank " + std::to_string(rank_) + " lost its connection" + (lost_.size() > 1 ? "s" : "") +
                              " to " + rank_list(lost_) + ": " + why));
}

// What this rank saw of the losses, or else what the rank that told it saw.
std::string TcpMesh::why_lost() const {
  if (lost_silent_) return lost_why_;
  if (!lost_why_.empty()) {
    return lost_why_ + " (the rank or its host stopped answering; CHORUS_PEER_TIMEOUT_SECONDS=" +
           std::to_string(static_cast<int>(peer_timeout_seconds_)) + ")";
  }
  if (!told_why_.empty()) return told_why_;
  if (lost_.size() == 1) return "rank " + std::to_string(lost_[0]) + " closed it (its process ended or was killed)";
  return "they closed them (their processes ended or were killed; the first to end stops the others)";
}

// The ranks still connected learn which ranks this one lost, and why,
// before its own connection ends, so they name those and not this one
// (best effort: what the sockets take now, and at close()). Payload: uint32
// count, that many int32 ranks, then the reason's text.
void TcpMesh::tell_the_others(const std::string& why) {
  std::string payload = encode_gone_notice(lost_, why);
  auto shared = std::make_shared<const std::string>(std::move(payload));
  for (int r = 0; r < size(); ++r) {
    if (r == rank_ || !peers_[static_cast<size_t>(r)].socket.valid()) continue;
    if (std::find(lost_.begin(), lost_.end(), r) != lost_.end()) continue;
    enqueue(r, TcpChannel::kGone, 0, shared, nullptr, static_cast<int64_t>(shared->size()), 0);
    write_some(r);
  }
}

// A malformed payload (a count past its end) names no rank: the peer's own
// end of stream, expected now, then tells nothing either.
void TcpMesh::heard_gone(int peer, const std::string& payload) {
  peers_[static_cast<size_t>(peer)].closing = true;  // it stops: its end of stream is expected
  GoneNotice notice = decode_gone_notice(payload, size(), rank_);
  for (int r : notice.lost) {
    if (std::find(lost_.begin(), lost_.end(), r) == lost_.end()) lost_.push_back(r);
  }
  if (told_why_.empty() && !notice.why.empty()) told_why_ = std::move(notice.why);
}

// Writes what is queued to the ranks still connected, until `until`.
void TcpMesh::flush_before(Deadline until) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<int> ranks;
    for (size_t r = 0; r < peers_.size(); ++r) {
      if (peers_[r].socket.valid() && !peers_[r].out.empty()) {
        fds.push_back({peers_[r].socket.fd(), POLLOUT, 0});
        ranks.push_back(static_cast<int>(r));
      }
    }
    if (fds.empty() || Clock::now() >= until) return;
    if (::poll(fds.data(), fds.size(), 10) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents & POLLOUT) {
        if (!write_some(ranks[i]).is_ok()) peers_[static_cast<size_t>(ranks[i])].out.clear();
      } else if (fds[i].revents != 0) {
        peers_[static_cast<size_t>(ranks[i])].out.clear();  // gone: nothing more to tell it
      }
    }
  }
}

// ---- Liveness ----
//
// A process that is stopped (SIGSTOP, a debugger) or whose host froze keeps
// its connections open and, while its kernel runs, acknowledged: only the
// silence of its background thread tells. Heartbeats keep quiet links
// talking, so silence past the limit means the peer no longer runs.

void TcpMesh::watch_liveness(double timeout_seconds) {
  liveness_timeout_seconds_ = timeout_seconds;
  if (timeout_seconds <= 0) return;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  silence_limit_ = limit;
  heartbeat_every_ = limit / 4;
  const Clock::time_point now = Clock::now();
  for (Peer& p : peers_) p.last_heard = p.last_sent = now;
  next_liveness_check_ = now;
}

// A heartbeat on each link with nothing queued and nothing sent for a
// quarter of the limit; a peer silent past the limit joins the lost.
void TcpMesh::keep_alive() {
  const Clock::time_point now = Clock::now();
  if (now < next_liveness_check_) return;
  next_liveness_check_ = now + std::min<Clock::duration>(heartbeat_every_ / 2, std::chrono::milliseconds(100));
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    if (r == rank_ || !p.socket.valid() || p.closing) continue;
    if (p.heard != p.heard_seen) {
      p.heard_seen = p.heard;
      p.last_heard = now;
    }
    if (p.sent != p.sent_seen) {
      p.sent_seen = p.sent;
      p.last_sent = now;
    }
    if (now - p.last_heard > silence_limit_) {
      peer_silent(r);
    } else if (p.out.empty() && now - p.last_sent >= heartbeat_every_) {
      enqueue(r, TcpChannel::kHeartbeat, 0, nullptr, nullptr, 0, 0);
      write_some(r);  // a failure joins the lost
      p.sent_seen = p.sent;
      p.last_sent = now;
    }
  }
}

void TcpMesh::peer_silent(int peer) {
  if (lost_.empty() || lost_silent_) {
    std::ostringstream limit;
    limit << liveness_timeout_seconds_;
    lost_silent_ = true;
    lost_why_ = "nothing arrived for " + limit.str() +
                " s (a stopped or hung process, or a frozen host; CHORUS_HEARTBEAT_TIMEOUT_SECONDS=" + limit.str() +
                ")";
  }
  if (std::find(lost_.begin(), lost_.end(), peer) == lost_.end()) lost_.push_back(peer);
}

}  // namespace chorus::detail
