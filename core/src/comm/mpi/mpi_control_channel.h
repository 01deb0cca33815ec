#pragma once
// ControlChannel over MPI point-to-point on a private duplicate of
// MPI_COMM_WORLD: requests go up with tag kRequestTag, response lists down
// with kResponseTag. Sends are non-blocking (the buffer lives until MPI is
// done with it); receives are probe-then-receive, so a poll never blocks.

#include <mpi.h>

#include <chrono>
#include <list>
#include <memory>
#include <string>

#include "comm/control_channel.h"

namespace chorus::detail {

class MpiControlChannel final : public ControlChannel {
 public:
  MpiControlChannel(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  Status send_to_coordinator(std::string bytes) override;
  bool poll_from_workers(int* from_rank, std::string* bytes) override;
  Status send_to_workers(const std::string& bytes) override;
  bool poll_from_coordinator(std::string* bytes) override;
  bool close(std::chrono::milliseconds bound) override;

 private:
  struct PendingSend {
    std::shared_ptr<const std::string> bytes;
    MPI_Request request;
  };
  Status post_send(std::shared_ptr<const std::string> bytes, int dest, int tag);
  void reap_sends();
  bool poll(int source, int tag, int* from, std::string* bytes);
  void drain_incoming();

  MPI_Comm comm_;
  int rank_, size_;
  std::list<PendingSend> pending_;
};

}  // namespace chorus::detail
