#include "host_list.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace chorus::launcher {

namespace {

// Host names and IPv4 addresses: dot-separated labels of letters, digits,
// '-' and '_', none empty (so not ".", "a..b" or ".a"), none starting or
// ending with '-'. (IPv6 literals are not accepted: ':' separates the slot
// count.)
bool valid_label(const std::string& label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
  return std::all_of(label.begin(), label.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_';
  });
}

bool valid_host_name(const std::string& h) {
  if (h.empty() || h.size() > 253) return false;
  for (size_t start = 0;;) {
    const size_t dot = h.find('.', start);
    if (!valid_label(h.substr(start, dot == std::string::npos ? std::string::npos : dot - start))) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

bool parse_slots(const std::string& text, int* out) {
  if (text.empty() || text.size() > 6) return false;
  if (!std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) return false;
  *out = std::stoi(text);
  return *out > 0;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

std::string parse_host_spec(const std::string& spec, std::vector<HostSlots>* out) {
  out->clear();
  if (spec.empty()) return "empty host list (expected host:slots,... e.g. a:4,b:4)";
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    HostSlots h;
    const auto colon = item.find(':');
    h.host = item.substr(0, colon);
    if (!valid_host_name(h.host)) {
      return "malformed host '" + item + "' in '" + spec + "' (expected host:slots, e.g. a:4)";
    }
    if (colon != std::string::npos && !parse_slots(item.substr(colon + 1), &h.slots)) {
      return "malformed slot count in '" + item + "' (expected a whole number > 0, e.g. " + h.host + ":4)";
    }
    out->push_back(h);
  }
  if (spec.back() == ',') return "malformed host list '" + spec + "': trailing comma";
  return "";
}

std::string parse_hostfile(const std::string& text, const std::string& origin, std::vector<HostSlots>* out) {
  out->clear();
  std::stringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string where = origin + ":" + std::to_string(line_no) + ": ";
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::stringstream words(line);
    HostSlots h;
    words >> h.host;
    if (!valid_host_name(h.host)) return where + "malformed host '" + h.host + "'";
    for (std::string w; words >> w;) {
      const auto eq = w.find('=');
      const std::string key = w.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : w.substr(eq + 1);
      if (key == "slots") {
        if (!parse_slots(value, &h.slots)) return where + "malformed '" + w + "' (expected slots=N, N > 0)";
      } else if (key != "max_slots") {
        return where + "unknown field '" + w + "' (expected 'host slots=N')";
      }
    }
    out->push_back(h);
  }
  if (out->empty()) return origin + ": no hosts in the file";
  return "";
}

bool is_valid_host_name(const std::string& host) { return valid_host_name(host); }

bool parse_slot_count(const std::string& text, int* out) { return parse_slots(text, out); }

bool is_local_host(const std::string& host, const std::vector<std::string>& local_names) {
  if (host == "localhost" || host == "127.0.0.1" || host.rfind("127.", 0) == 0) return true;
  return std::find(local_names.begin(), local_names.end(), host) != local_names.end();
}

}  // namespace chorus::launcher
