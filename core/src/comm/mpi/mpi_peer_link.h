#pragma once
// PeerLink over MPI point-to-point (MPI_Isend / MPI_Irecv / MPI_Wait) on a
// communicator of its own, for the ring algorithms. Called from the
// background thread only.

#include <mpi.h>

#include <vector>

#include "comm/peer_link.h"

namespace chorus::detail {

class MpiPeerLink final : public PeerLink {
 public:
  MpiPeerLink(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) override;
  Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) override;
  Status wait(Request request) override;

 private:
  Request store(MPI_Request r);
  MPI_Comm comm_;
  int rank_, size_;
  std::vector<MPI_Request> requests_;  // indexed by Request; MPI_REQUEST_NULL = free
  std::vector<Request> free_;
};

}  // namespace chorus::detail
