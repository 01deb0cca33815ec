#include "comm/mpi/mpi_peer_link.h"

#include <climits>
#include <string>

namespace chorus::detail {

namespace {
Status too_large(int64_t bytes) {
  return Status::invalid_argument("a single ring message of " + std::to_string(bytes) +
                                  " bytes exceeds MPI's int count; lower the segment size");
}
}  // namespace

PeerLink::Request MpiPeerLink::store(MPI_Request r) {
  if (!free_.empty()) {
    const Request id = free_.back();
    free_.pop_back();
    requests_[static_cast<size_t>(id)] = r;
    return id;
  }
  requests_.push_back(r);
  return static_cast<Request>(requests_.size() - 1);
}

Status MpiPeerLink::isend(int peer, int tag, const void* data, int64_t bytes, Request* request) {
  if (bytes > INT_MAX) return too_large(bytes);
  MPI_Request r;
  if (MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &r) != MPI_SUCCESS) {
    return Status::unknown_error("MPI_Isend to rank " + std::to_string(peer) + " failed");
  }
  *request = store(r);
  return Status::ok();
}

Status MpiPeerLink::irecv(int peer, int tag, void* data, int64_t bytes, Request* request) {
  if (bytes > INT_MAX) return too_large(bytes);
  MPI_Request r;
  if (MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &r) != MPI_SUCCESS) {
    return Status::unknown_error("MPI_Irecv from rank " + std::to_string(peer) + " failed");
  }
  *request = store(r);
  return Status::ok();
}

Status MpiPeerLink::wait(Request request) {
  if (request < 0 || request >= static_cast<Request>(requests_.size())) {
    return Status::internal("unknown ring request " + std::to_string(request));
  }
  MPI_Request& r = requests_[static_cast<size_t>(request)];
  const int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  r = MPI_REQUEST_NULL;
  free_.push_back(request);
  return rc == MPI_SUCCESS ? Status::ok() : Status::unknown_error("MPI_Wait on a ring transfer failed");
}

}  // namespace chorus::detail
