#pragma once
// Hosts and their slots, from `-H host:slots,...` or a hostfile
// (`host slots=N` lines, `#` comments). Pure parsing: errors come back as
// messages that quote the offending text.

#include <string>
#include <vector>

namespace chorus::launcher {

struct HostSlots {
  std::string host;
  int slots = 1;
  bool operator==(const HostSlots& o) const { return host == o.host && slots == o.slots; }
};

/// Parses "a:4,b:4" (slots default to 1: "a,b"). Returns "" or an error.
std::string parse_host_spec(const std::string& spec, std::vector<HostSlots>* out);

/// Parses hostfile text: one host a line, optional "slots=N" (or
/// "max_slots=N", ignored), '#' starts a comment. `origin` names the file
/// in errors. Returns "" or an error naming the line.
std::string parse_hostfile(const std::string& text, const std::string& origin, std::vector<HostSlots>* out);

/// The host names -H and hostfiles accept: dot-separated labels of letters,
/// digits, '-' and '_' (so also IPv4 addresses). For other host lists
/// (host_discovery.h), so that every list takes the same names.
bool is_valid_host_name(const std::string& host);
/// A slot count: a whole number > 0, digits only.
bool parse_slot_count(const std::string& text, int* out);

/// Host names that mean "this machine".
bool is_local_host(const std::string& host, const std::vector<std::string>& local_names);

}  // namespace chorus::launcher
