#include "rendezvous/tcp_peer_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace chorus::detail {

bool is_loopback_address(const std::string& address) {
  if (address == "localhost" || address == "ip6-localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;  // a name: not known to be loopback here
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

Status address_to_record(int rank, const std::string& seen, const std::string& host_id,
                         const std::string& rank0_host_id, const std::string& master_addr, std::string* out) {
  if (!is_loopback_address(seen) || is_loopback_address(master_addr)) {
    *out = seen;
    return Status::ok();
  }
  if (host_id == rank0_host_id) {
    *out = master_addr;
    return Status::ok();
  }
  return Status::precondition_error(
      "rank " + std::to_string(rank) + " (host '" + host_id + "') reached rank 0 (host '" + rank0_host_id +
      "') from the loopback address " + seen +
      " (through a tunnel or proxy?), so the other ranks could not reach it; let every rank reach rank 0 directly "
      "at the master address '" + master_addr + "'");
}

}  // namespace chorus::detail
