#pragma once
// The ring's PeerLink over the TCP mesh: frames on the ring channel, matched
// per (peer, tag) in posting order, written straight from and read straight
// into the caller's memory.

#include "comm/peer_link.h"
#include "comm/tcp/tcp_mesh.h"

namespace chorus::detail {

class TcpPeerLink final : public PeerLink {
 public:
  explicit TcpPeerLink(TcpMesh& mesh) : mesh_(mesh) {}
  int rank() const override { return mesh_.rank(); }
  int size() const override { return mesh_.size(); }
  Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) override {
    return mesh_.send(peer, TcpChannel::kRing, static_cast<uint32_t>(tag), data, bytes, request);
  }
  Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) override {
    return mesh_.receive(peer, TcpChannel::kRing, static_cast<uint32_t>(tag), data, bytes, request);
  }
  Status wait(Request request) override { return mesh_.wait(request); }

 private:
  TcpMesh& mesh_;
};

}  // namespace chorus::detail
