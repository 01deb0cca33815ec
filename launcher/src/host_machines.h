#pragma once
// Which entries of a host list are one machine, for chorusrun --tcp's
// LOCAL_RANK, LOCAL_WORLD_SIZE and CROSS_*: a machine can be spelled several
// ways (node1 and its address, localhost and 127.0.0.1), and a rank counts
// its machine's ranks however the list named them. Each name is resolved
// once; names that share an address are one machine, and a name of this
// machine (an address of its interfaces, loopback, its own hostname) is the
// local one. The resolver is a parameter, so the rules are unit-tested
// without /etc/hosts or DNS.

#include <functional>
#include <string>
#include <vector>

#include "host_list.h"

namespace chorus::launcher {

/// What a host name resolves to: its addresses, or why it does not resolve.
struct Resolution {
  std::vector<std::string> addresses;  ///< numeric, as inet_ntop writes them
  std::string error;                   ///< "" when it resolved
};
using HostResolver = std::function<Resolution(const std::string& host)>;

/// One machine of the host list: the spelling it first had there (what
/// ssh reaches it by), and the slots of every entry that names it.
struct Machine {
  std::string host;
  int slots = 0;
  bool local = false;
  /// This machine's first name in the list that other machines can use too:
  /// not loopback, nor one of `local_names` ("": none).
  std::string outside_name;
  bool operator==(const Machine& o) const {
    return host == o.host && slots == o.slots && local == o.local && outside_name == o.outside_name;
  }
};

/// The machines of `hosts` in the order they first appear, each with its
/// entries' slots added up (as mpirun does with `-H a:2,a:2`).
/// `local_names` (is_local_host's) are this machine without resolving (its
/// hostname may be missing from /etc/hosts); so is a name that resolves to
/// loopback or to one of `local_addresses`. Returns "" or an error naming
/// a host that does not resolve. A null `resolve` compares names as spelled.
std::string group_by_machine(const std::vector<HostSlots>& hosts, const std::vector<std::string>& local_names,
                             const std::vector<std::string>& local_addresses, const HostResolver& resolve,
                             std::vector<Machine>* out);

/// getaddrinfo's answer for `host`.
Resolution resolve_host(const std::string& host);
/// Every address of this machine's interfaces (getifaddrs).
std::vector<std::string> local_addresses();

}  // namespace chorus::launcher
