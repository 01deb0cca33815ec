#include "rendezvous/elastic_wire.h"

#include <climits>
#include <sstream>

#include "common/number_text.h"
#include "rendezvous/tcp_rendezvous_wire.h"

namespace chorus::detail {

namespace {

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
  if (!whole_number(version, 1, INT64_MAX, &w->version) || !whole_number(rank, 0, INT32_MAX, &r) ||
      !whole_unsigned(key, &w->key) || !whole_number(generation, 0, INT64_MAX, &w->hosts_generation)) {
    return garbage("world");
  }
  w->rank = static_cast<int>(r);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    TcpPeerInfo p;
    std::string port;
    int64_t port_value = 0;
    if (!std::getline(fields, p.host_id, '\t') || !std::getline(fields, p.address, '\t') ||
        !std::getline(fields, port) || !whole_number(port, 1, 65535, &port_value)) {
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
      !std::getline(in, out->host_id) || !std::getline(in, port) || !whole_number(port, 1, 65535, &p) ||
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
    if (!std::getline(in, generation) || !std::getline(in, kinds) ||
        !whole_number(generation, 1, INT64_MAX, &out->hosts.generation) ||
        !whole_number(kinds, 1, kHostsAdded | kHostsRemoved, &k)) {
      return garbage("hosts");
    }
    out->hosts.kinds = static_cast<int>(k);
    return Status::ok();
  }
  return garbage("'" + kind.substr(0, 32) + "'");
}

std::string encode_etcd_member(const EtcdMemberValue& member) {
  return encode_join(member.join) + "\n" + member.address + "\n" + std::to_string(member.after);
}

// The join's four lines, then the address and the version.
Status decode_etcd_member(const std::string& text, EtcdMemberValue* out) {
  const size_t last = text.rfind('\n');
  const size_t address = last == std::string::npos || last == 0 ? std::string::npos : text.rfind('\n', last - 1);
  const Status bad = Status::invalid_argument("not an elastic member's value in etcd");
  if (address == std::string::npos || !whole_number(text.substr(last + 1), 0, INT64_MAX, &out->after)) return bad;
  out->address = text.substr(address + 1, last - address - 1);
  if (out->address.empty() || !decode_join(text.substr(0, address), &out->join).is_ok()) return bad;
  return Status::ok();
}

std::string encode_etcd_world(const ElasticWorld& world, const std::vector<std::string>& member_ids) {
  std::string out = "members";
  for (const std::string& id : member_ids) out += "\t" + id;
  ElasticWorld w = world;
  w.rank = 0;
  return out + "\n" + encode_world(w);
}

Status decode_etcd_world(const std::string& text, ElasticWorld* world, std::vector<std::string>* member_ids) {
  const size_t eol = text.find('\n');
  std::istringstream ids(text.substr(0, eol));
  std::string field;
  member_ids->clear();
  if (eol == std::string::npos || !std::getline(ids, field, '\t') || field != "members") return garbage("world");
  while (std::getline(ids, field, '\t')) {
    if (field.empty()) return garbage("world");  // no member has an empty id (decode_join)
    member_ids->push_back(field);
  }
  ElasticMessage m;
  Status s = decode_message(text.substr(eol + 1), &m);
  if (!s.is_ok()) return s;
  if (m.kind != ElasticMessage::Kind::kWorld || m.world.peers.size() != member_ids->size()) return garbage("world");
  *world = std::move(m.world);
  return Status::ok();
}

}  // namespace chorus::detail
