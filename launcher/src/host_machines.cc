#include "host_machines.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace chorus::launcher {

namespace {

bool is_loopback_address(const std::string& a) {
  return a.rfind("127.", 0) == 0 || a == "::1" || a.rfind("::ffff:127.", 0) == 0;
}

// "" for an address of another family.
std::string numeric_address(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (sa == nullptr) return "";
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  }
  return text;
}

// Each distinct name of the list once, in order, with what it resolved to.
struct Name {
  std::string host;
  bool local = false;
  bool loopback = false;  // a name of this machine that only it can use
  std::vector<std::string> addresses;
};

std::string resolve_names(const std::vector<HostSlots>& hosts, const std::vector<std::string>& local_names,
                          const std::vector<std::string>& local_addresses, const HostResolver& resolve,
                          std::vector<Name>* out) {
  for (const HostSlots& h : hosts) {
    if (std::any_of(out->begin(), out->end(), [&](const Name& n) { return n.host == h.host; })) continue;
    Name n{h.host, is_local_host(h.host, local_names), false, {}};
    n.loopback = n.local;
    if (!n.local && resolve) {
      Resolution r = resolve(h.host);
      if (!r.error.empty()) return "host '" + h.host + "' of the host list does not resolve (" + r.error + ")";
      n.addresses = std::move(r.addresses);
      n.local = std::any_of(n.addresses.begin(), n.addresses.end(), [&](const std::string& a) {
        return is_loopback_address(a) ||
               std::find(local_addresses.begin(), local_addresses.end(), a) != local_addresses.end();
      });
      n.loopback = std::all_of(n.addresses.begin(), n.addresses.end(), is_loopback_address);
    }
    out->push_back(std::move(n));
  }
  return "";
}

bool share_an_address(const Name& a, const Name& b) {
  return std::any_of(a.addresses.begin(), a.addresses.end(), [&](const std::string& x) {
    return std::find(b.addresses.begin(), b.addresses.end(), x) != b.addresses.end();
  });
}

// Union-find whose root is a group's first name: the spelling it keeps.
int root_of(std::vector<int>& parent, int i) {
  while (parent[static_cast<size_t>(i)] != i) i = parent[static_cast<size_t>(i)];
  return i;
}

void join(std::vector<int>& parent, int a, int b) {
  a = root_of(parent, a);
  b = root_of(parent, b);
  parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
}

}  // namespace

std::string group_by_machine(const std::vector<HostSlots>& hosts, const std::vector<std::string>& local_names,
                             const std::vector<std::string>& local_addresses, const HostResolver& resolve,
                             std::vector<Machine>* out) {
  out->clear();
  std::vector<Name> names;
  if (std::string why = resolve_names(hosts, local_names, local_addresses, resolve, &names); !why.empty()) return why;
  const int n = static_cast<int>(names.size());
  std::vector<int> parent(names.size());
  for (int i = 0; i < n; ++i) parent[static_cast<size_t>(i)] = i;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      const Name &a = names[static_cast<size_t>(i)], &b = names[static_cast<size_t>(j)];
      if ((a.local && b.local) || (!a.local && !b.local && share_an_address(a, b))) join(parent, i, j);
    }
  }
  std::vector<int> machine_of_root(names.size(), -1);
  for (int i = 0; i < n; ++i) {
    const int root = root_of(parent, i);
    if (machine_of_root[static_cast<size_t>(root)] >= 0) continue;
    machine_of_root[static_cast<size_t>(root)] = static_cast<int>(out->size());
    out->push_back({names[static_cast<size_t>(root)].host, 0, names[static_cast<size_t>(root)].local, ""});
  }
  for (int i = n - 1; i >= 0; --i) {  // backwards: the first such name stays
    const Name& name = names[static_cast<size_t>(i)];
    const int machine = machine_of_root[static_cast<size_t>(root_of(parent, i))];
    if (!name.loopback) (*out)[static_cast<size_t>(machine)].outside_name = name.host;
  }
  for (const HostSlots& h : hosts) {
    const auto it = std::find_if(names.begin(), names.end(), [&](const Name& x) { return x.host == h.host; });
    const int root = root_of(parent, static_cast<int>(it - names.begin()));
    (*out)[static_cast<size_t>(machine_of_root[static_cast<size_t>(root)])].slots += h.slots;
  }
  return "";
}

Resolution resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  addrinfo* found = nullptr;
  Resolution r;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    r.error = rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc);
    return r;
  }
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const std::string text = numeric_address(a->ai_addr);
    if (!text.empty() && std::find(r.addresses.begin(), r.addresses.end(), text) == r.addresses.end()) {
      r.addresses.push_back(text);
    }
  }
  freeaddrinfo(found);
  if (r.addresses.empty()) r.error = "no IPv4 or IPv6 address";
  return r;
}

std::vector<std::string> local_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    const std::string text = numeric_address(i->ifa_addr);
    if (!text.empty()) out.push_back(text);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace chorus::launcher
