#pragma once
// A POSIX shared-memory segment that rank 0 of a group on this host makes
// and every rank of the group maps, agreed over the group's collectives
// (comm/communicator.h). Its name is removed as soon as every rank has
// mapped it (or given up), so a job that dies after that leaves nothing in
// /dev/shm. Used by the shared-memory allreduce (comm/shm/host_shared_memory.h)
// and the TCP transport's control plane on one host (comm/shm/shm_control_channel.h).

#include <cstddef>
#include <string>

#include "chorus/status.h"
#include "comm/communicator.h"

namespace chorus::detail {

/// `ranks` parts of `per_rank` bytes; the first `head` bytes of each are
/// reserved in /dev/shm up front (a full /dev/shm fails here, not as SIGBUS
/// later); with `sparse_tail` the rest of each part only as it is touched.
struct SegmentShape {
  size_t per_rank = 0;
  size_t head = 0;
  int ranks = 1;
  bool sparse_tail = false;
  size_t total() const { return per_rank * static_cast<size_t>(ranks); }
};

/// This rank's mapping; `fd` stays open (else -1) when asked for.
struct SegmentMapping {
  void* base = nullptr;
  int fd = -1;
};

/// Collective over `comm` (this is rank `rank`). `*mapped`: every rank
/// mapped the segment, and `*mapping` holds this rank's; otherwise no rank
/// holds one and `*error` says what failed here (empty: it failed on
/// another rank). An error status only when `comm` itself failed.
Status share_segment(Communicator& comm, int rank, const SegmentShape& shape, bool keep_fd, SegmentMapping* mapping,
                     bool* mapped, std::string* error);

}  // namespace chorus::detail
