#pragma once
// Point-to-point transport between the ranks of a job, as the ring
// algorithms need it: non-blocking send and receive of byte ranges, matched
// per (peer, tag) in posting order, and a wait. Implementations: MPI
// (comm/mpi/mpi_peer_link.h), TCP (comm/tcp/tcp_peer_link.h, over the
// job's mesh), in-process threads (comm/loopback/in_process_links.h) in
// unit tests.

#include <cstdint>

#include "chorus/status.h"

namespace chorus::detail {

class PeerLink {
 public:
  using Request = int64_t;
  virtual ~PeerLink() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Starts sending `bytes` bytes at `data` to `peer`; the memory must stay
  /// untouched until wait() on the request returned.
  virtual Status isend(int peer, int tag, const void* data, int64_t bytes, Request* request) = 0;
  /// Starts receiving exactly `bytes` bytes from `peer` into `data`.
  virtual Status irecv(int peer, int tag, void* data, int64_t bytes, Request* request) = 0;
  /// Blocks until the request completed and releases it.
  virtual Status wait(Request request) = 0;
};

}  // namespace chorus::detail
