#pragma once
// The control channel over the TCP mesh: workers' requests to rank 0 and
// rank 0's responses to every worker, as frames on the control channel.
// Polls drive the sockets once without waiting, so they also notice a dead
// peer; failure() then names it and the background loop stops with it.

#include <memory>
#include <string>

#include "comm/control_channel.h"
#include "comm/tcp/tcp_mesh.h"

namespace chorus::detail {

class TcpControlChannel final : public ControlChannel {
 public:
  explicit TcpControlChannel(TcpMesh& mesh) : mesh_(mesh) {}
  Status send_to_coordinator(std::string bytes) override {
    return mesh_.send_owned(0, TcpChannel::kControl, 0, std::make_shared<const std::string>(std::move(bytes)));
  }
  bool poll_from_workers(int* from_rank, std::string* bytes) override { return mesh_.take_control(from_rank, bytes); }
  Status send_to_workers(const std::string& bytes) override {
    auto shared = std::make_shared<const std::string>(bytes);  // one copy for every worker
    for (int r = 1; r < mesh_.size(); ++r) {
      Status s = mesh_.send_owned(r, TcpChannel::kControl, 0, shared);
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }
  bool poll_from_coordinator(std::string* bytes) override { return mesh_.take_control(nullptr, bytes); }
  bool close(std::chrono::milliseconds bound) override { return mesh_.close(bound); }
  std::vector<int> not_at_close() const override { return mesh_.not_closed(); }
  Status failure() const override { return mesh_.failure(); }

 private:
  TcpMesh& mesh_;
};

}  // namespace chorus::detail
