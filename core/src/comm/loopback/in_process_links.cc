#include "comm/loopback/in_process_links.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace chorus::detail {

class InProcessNetwork {
 public:
  explicit InProcessNetwork(int size) : size_(size) {}
  int size() const { return size_; }

  void post(int from, int to, int tag, const void* data, int64_t bytes) {
    const char* p = static_cast<const char*>(data);
    {
      std::lock_guard<std::mutex> lock(mu_);
      boxes_[{from, to, tag}].emplace_back(p, p + bytes);
    }
    cv_.notify_all();
  }

  std::vector<char> take(int from, int to, int tag) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& box = boxes_[{from, to, tag}];
    cv_.wait(lock, [&] { return !box.empty(); });
    std::vector<char> out = std::move(box.front());
    box.pop_front();
    return out;
  }

 private:
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> boxes_;
};

namespace {

class InProcessLink final : public PeerLink {
 public:
  InProcessLink(std::shared_ptr<InProcessNetwork> network, int rank) : net_(std::move(network)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return net_->size(); }

  Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) override {
    if (peer < 0 || peer >= size()) return Status::invalid_argument("send to rank " + std::to_string(peer));
    net_->post(rank_, peer, tag, data, bytes);
    *request = next_++;  // already complete
    return Status::ok();
  }

  Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) override {
    if (peer < 0 || peer >= size()) return Status::invalid_argument("receive from rank " + std::to_string(peer));
    *request = next_++;
    recvs_[*request] = {peer, tag, data, bytes};
    return Status::ok();
  }

  Status wait(Request request) override {
    auto it = recvs_.find(request);
    if (it == recvs_.end()) return Status::ok();  // a send: done when posted
    const PendingRecv r = it->second;
    recvs_.erase(it);
    std::vector<char> message = net_->take(r.peer, rank_, r.tag);
    if (static_cast<int64_t>(message.size()) != r.bytes) {
      return Status::unknown_error("rank " + std::to_string(rank_) + " expected " + std::to_string(r.bytes) +
                                   " bytes from rank " + std::to_string(r.peer) + " (tag " + std::to_string(r.tag) +
                                   ") but got " + std::to_string(message.size()));
    }
    if (r.bytes > 0) std::memcpy(r.data, message.data(), message.size());
    return Status::ok();
  }

 private:
  struct PendingRecv {
    int peer, tag;
    void* data;
    int64_t bytes;
  };
  std::shared_ptr<InProcessNetwork> net_;
  int rank_;
  Request next_ = 1;
  std::unordered_map<Request, PendingRecv> recvs_;
};

}  // namespace

std::shared_ptr<InProcessNetwork> make_in_process_network(int size) {
  return std::make_shared<InProcessNetwork>(size);
}

std::unique_ptr<PeerLink> make_in_process_link(std::shared_ptr<InProcessNetwork> network, int rank) {
  return std::make_unique<InProcessLink>(std::move(network), rank);
}

}  // namespace chorus::detail
