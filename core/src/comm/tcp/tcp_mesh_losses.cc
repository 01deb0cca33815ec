#include <poll.h>

#include <algorithm>
#include <cstring>

#include "comm/tcp/tcp_mesh.h"
#include "common/rank_text.h"

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
  std::string text = "rank " + std::to_string(rank_) + " lost its connection" + (lost_.size() > 1 ? "s" : "") +
                     " to " + rank_list(lost_) + ": ";
  if (!lost_why_.empty()) {
    text += lost_why_ + " (the rank or its host stopped answering; CHORUS_PEER_TIMEOUT_SECONDS=" +
            std::to_string(static_cast<int>(peer_timeout_seconds_)) + ")";
  } else if (lost_.size() == 1) {
    text += "rank " + std::to_string(lost_[0]) + " closed it (its process ended or was killed)";
  } else {
    text += "they closed them (their processes ended or were killed; the first to end stops the others)";
  }
  tell_the_others();
  return fail(Status::aborted(text));
}

// The ranks still connected learn which ranks this one lost before its own
// connection ends, so they name those and not this one (best effort: what
// the sockets take now, and at close()).
void TcpMesh::tell_the_others() {
  std::string payload(lost_.size() * 4, '\0');
  for (size_t i = 0; i < lost_.size(); ++i) {
    const auto r = static_cast<int32_t>(lost_[i]);
    std::memcpy(&payload[i * 4], &r, 4);
  }
  auto shared = std::make_shared<const std::string>(std::move(payload));
  for (int r = 0; r < size(); ++r) {
    if (r == rank_ || !peers_[static_cast<size_t>(r)].socket.valid()) continue;
    if (std::find(lost_.begin(), lost_.end(), r) != lost_.end()) continue;
    enqueue(r, TcpChannel::kGone, 0, shared, nullptr, static_cast<int64_t>(shared->size()), 0);
    write_some(r);
  }
}

void TcpMesh::heard_gone(int peer, const std::string& payload) {
  peers_[static_cast<size_t>(peer)].closing = true;  // it stops: its end of stream is expected
  for (size_t i = 0; i + 4 <= payload.size(); i += 4) {
    int32_t r = 0;
    std::memcpy(&r, payload.data() + i, 4);
    if (r >= 0 && r < size() && r != rank_ && std::find(lost_.begin(), lost_.end(), r) == lost_.end()) {
      lost_.push_back(r);
    }
  }
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

}  // namespace chorus::detail
