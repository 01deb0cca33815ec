#pragma once
// Which address rank 0 tells the others to reach a rank's listener at. It
// sees the address each rank connected from; a loopback one (a rank on
// rank 0's machine that reached it through "localhost", or through a host
// name that /etc/hosts maps to 127.0.1.1 as Debian does) is useless to ranks
// on other hosts, who would connect to their own loopback.

#include <string>

#include "chorus/status.h"

namespace chorus::detail {

/// Whether `address` (a literal, or "localhost") is a loopback address:
/// 127.0.0.0/8, ::1, or an IPv4-mapped 127.x.
bool is_loopback_address(const std::string& address);

/// The address to record for rank `rank`, seen by rank 0 at `seen`. A
/// loopback `seen` from a rank with rank 0's host id shares rank 0's network
/// stack, so it gets `master_addr` (where the others reach rank 0). From
/// another host id (a tunnel or proxy), it is an error naming the rank,
/// unless `master_addr` itself is loopback (a job on one machine that plays
/// several hosts by CHORUS_HOST_ID).
Status address_to_record(int rank, const std::string& seen, const std::string& host_id,
                         const std::string& rank0_host_id, const std::string& master_addr, std::string* out);

}  // namespace chorus::detail
