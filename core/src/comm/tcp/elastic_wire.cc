#include "comm/tcp/elastic_wire.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace chorus::detail {

namespace {

bool to_int64(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool to_uint64(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

Status garbage(const std::string& what) {
  return Status::unknown_error("the elastic rendezvous sent a malformed " + what +
                               " message (are the launcher and the workers the same Chorus build?)");
}

Status decode_world(std::istringstream& in, ElasticWorld* w) {
  std::string version, rank, key, generation;
  if (!std::getline(in, version) || !std::getline(in, rank) || !std::getline(in, key) ||
      !std::getline(in, generation) || !std::getline(in, w->job_id)) {
    return garbage("world");
  }
  int64_t r = 0;
  if (!to_int64(version, &w->version) || !to_int64(rank, &r) || !to_uint64(key, &w->key) ||
      !to_int64(generation, &w->hosts_generation)) {
    return garbage("world");
  }
  w->rank = static_cast<int>(r);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    TcpPeerInfo p;
    std::string port;
    int64_t port_value = 0;
    if (!std::getline(fields, p.host_id, '\t') || !std::getline(fields, p.address, '\t') ||
        !std::getline(fields, port) || !to_int64(port, &port_value) || port_value <= 0 || port_value > 65535) {
      return garbage("world");
    }
    p.port = static_cast<int>(port_value);
    w->peers.push_back(std::move(p));
  }
  if (w->rank < 0 || w->rank >= static_cast<int>(w->peers.size())) return garbage("world");
  return Status::ok();
}

}  // namespace

std::string encode_join(const ElasticJoin& join) {
  return "join\n" + join.member_id + "\n" + join.host_id + "\n" + std::to_string(join.port);
}

Status decode_join(const std::string& text, ElasticJoin* out) {
  std::istringstream in(text);
  std::string kind, port;
  int64_t p = 0;
  if (!std::getline(in, kind) || kind != "join" || !std::getline(in, out->member_id) ||
      !std::getline(in, out->host_id) || !std::getline(in, port) || !to_int64(port, &p) || p <= 0 || p > 65535 ||
      out->member_id.empty()) {
    return Status::invalid_argument("not a join message of an elastic member");
  }
  out->port = static_cast<int>(p);
  return Status::ok();
}

std::string encode_world(const ElasticWorld& world) {
  std::string out = "world\n" + std::to_string(world.version) + "\n" + std::to_string(world.rank) + "\n" +
                    std::to_string(world.key) + "\n" + std::to_string(world.hosts_generation) + "\n" + world.job_id;
  for (const TcpPeerInfo& p : world.peers) {
    out += "\n" + p.host_id + "\t" + p.address + "\t" + std::to_string(p.port);
  }
  return out;
}

std::string encode_error(const std::string& message) { return "error\n" + message; }

std::string encode_hosts(const ElasticHostsNotice& notice) {
  return "hosts\n" + std::to_string(notice.generation) + "\n" + std::to_string(notice.kinds);
}

Status decode_message(const std::string& text, ElasticMessage* out) {
  std::istringstream in(text);
  std::string kind;
  std::getline(in, kind);
  if (kind == "world") {
    out->kind = ElasticMessage::Kind::kWorld;
    return decode_world(in, &out->world);
  }
  if (kind == "error") {
    out->kind = ElasticMessage::Kind::kError;
    out->error = text.size() > 6 ? text.substr(6) : "no reason given";
    return Status::ok();
  }
  if (kind == "hosts") {
    out->kind = ElasticMessage::Kind::kHosts;
    std::string generation, kinds;
    int64_t k = 0;
    if (!std::getline(in, generation) || !std::getline(in, kinds) || !to_int64(generation, &out->hosts.generation) ||
        !to_int64(kinds, &k)) {
      return garbage("hosts");
    }
    out->hosts.kinds = static_cast<int>(k);
    return Status::ok();
  }
  return garbage("'" + kind.substr(0, 32) + "'");
}

}  // namespace chorus::detail
