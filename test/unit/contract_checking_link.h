#pragma once
// A PeerLink that checks PeerLink's contract on send memory while passing
// everything to another link: the data-plane algorithm tests run through it.

#include <map>
#include <memory>
#include <utility>

#include "comm/peer_link.h"

namespace chorus::test {

// PeerLink's contract: a send's memory stays untouched until its wait()
// returned. The in-process link copies at once, so a receive posted into
// such memory would not show in the results: this link counts them.
class ContractCheckingLink final : public detail::PeerLink {
 public:
  explicit ContractCheckingLink(std::unique_ptr<PeerLink> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) override {
    Status s = inner_->isend(peer, tag, data, bytes, request);
    if (s.is_ok()) unwaited_sends_[*request] = {static_cast<const char*>(data), bytes};
    return s;
  }
  Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) override {
    const char* at = static_cast<const char*>(data);
    for (const auto& [request_id, range] : unwaited_sends_) {
      if (at < range.first + range.second && range.first < at + bytes) ++breaches;
    }
    return inner_->irecv(peer, tag, data, bytes, request);
  }
  Status wait(Request request) override {
    Status s = inner_->wait(request);
    unwaited_sends_.erase(request);
    return s;
  }
  int64_t breaches = 0;  ///< receives posted into memory a send not yet waited for reads

 private:
  std::unique_ptr<PeerLink> inner_;
  std::map<Request, std::pair<const char*, int64_t>> unwaited_sends_;
};

}  // namespace chorus::test
