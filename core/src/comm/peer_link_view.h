#pragma once
// A PeerLink over some of another link's ranks: `members` (ranks of the
// parent, each once) are this view's ranks 0..n-1, in the order given. Lets
// an algorithm written for "every rank of a link" run among the ranks of one
// host or the ranks at one place on every host, over the parent's
// connections (dataplane/algorithms/hierarchical_allreduce.h). The calling
// rank must be a member; tags pass through unchanged.

#include <algorithm>
#include <utility>
#include <vector>

#include "comm/peer_link.h"

namespace chorus::detail {

class PeerLinkView final : public PeerLink {
 public:
  PeerLinkView(PeerLink& parent, std::vector<int> members)
      : parent_(parent), members_(std::move(members)),
        rank_(static_cast<int>(std::find(members_.begin(), members_.end(), parent.rank()) - members_.begin())) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) override {
    return parent_.isend(members_[static_cast<size_t>(peer)], tag, data, bytes, request);
  }
  Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) override {
    return parent_.irecv(members_[static_cast<size_t>(peer)], tag, data, bytes, request);
  }
  Status wait(Request request) override { return parent_.wait(request); }

 private:
  PeerLink& parent_;
  const std::vector<int> members_;
  const int rank_;
};

}  // namespace chorus::detail
