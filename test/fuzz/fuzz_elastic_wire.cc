// Fuzz target: the elastic wire (rendezvous/elastic_wire.h), what an elastic
// member reads from its rendezvous and the rendezvous from a member, and
// the values of an etcd job's keys. The first byte picks the decoder.
// Whatever one accepts must be what its consumers rely on (ranks inside the
// world, ports of a listener, a world version and notice generation that
// count from 1, notice kinds among Horovod's two, member ids never empty)
// and must come back unchanged through its encoder.
#include <climits>
#include <cstdint>

#include "rendezvous/elastic_wire.h"
#include "fuzz_check.h"

using namespace chorus::detail;

namespace {

void check_join(const ElasticJoin& j) {
  FUZZ_CHECK(!j.member_id.empty());
  FUZZ_CHECK(j.port >= 1 && j.port <= 65535);
}

bool same_peers(const std::vector<TcpPeerInfo>& a, const std::vector<TcpPeerInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].host_id != b[i].host_id || a[i].address != b[i].address || a[i].port != b[i].port) return false;
  }
  return true;
}

void check_world(const ElasticWorld& w) {
  FUZZ_CHECK(w.version >= 1);
  FUZZ_CHECK(w.hosts_generation >= 0);
  FUZZ_CHECK(w.rank >= 0 && w.rank < static_cast<int>(w.peers.size()));
  for (const TcpPeerInfo& p : w.peers) FUZZ_CHECK(p.port >= 1 && p.port <= 65535);
}

bool same_world(const ElasticWorld& a, const ElasticWorld& b) {
  return a.version == b.version && a.rank == b.rank && a.key == b.key && a.hosts_generation == b.hosts_generation &&
         a.job_id == b.job_id && same_peers(a.peers, b.peers);
}

void join(const std::string& text) {
  ElasticJoin j;
  if (!decode_join(text, &j).is_ok()) return;
  check_join(j);
  ElasticJoin again;
  FUZZ_CHECK(decode_join(encode_join(j), &again).is_ok());
  FUZZ_CHECK(again.member_id == j.member_id && again.host_id == j.host_id && again.port == j.port);
}

void message(const std::string& text) {
  ElasticMessage m;
  if (!decode_message(text, &m).is_ok()) return;
  ElasticMessage again;
  switch (m.kind) {
    case ElasticMessage::Kind::kWorld:
      check_world(m.world);
      FUZZ_CHECK(decode_message(encode_world(m.world), &again).is_ok());
      FUZZ_CHECK(again.kind == m.kind && same_world(again.world, m.world));
      break;
    case ElasticMessage::Kind::kHosts:
      FUZZ_CHECK(m.hosts.generation >= 1);
      FUZZ_CHECK(m.hosts.kinds >= 1 && m.hosts.kinds <= (kHostsAdded | kHostsRemoved));
      FUZZ_CHECK(decode_message(encode_hosts(m.hosts), &again).is_ok());
      FUZZ_CHECK(again.hosts.generation == m.hosts.generation && again.hosts.kinds == m.hosts.kinds);
      break;
    case ElasticMessage::Kind::kError:
      FUZZ_CHECK(!m.error.empty());
      FUZZ_CHECK(decode_message(encode_error(m.error), &again).is_ok());
      FUZZ_CHECK(again.kind == m.kind && again.error == m.error);
      break;
  }
}

void etcd_member(const std::string& text) {
  EtcdMemberValue v;
  if (!decode_etcd_member(text, &v).is_ok()) return;
  check_join(v.join);
  FUZZ_CHECK(!v.address.empty() && v.after >= 0);
  EtcdMemberValue again;
  FUZZ_CHECK(decode_etcd_member(encode_etcd_member(v), &again).is_ok());
  FUZZ_CHECK(again.join.member_id == v.join.member_id && again.join.host_id == v.join.host_id &&
             again.join.port == v.join.port && again.address == v.address && again.after == v.after);
}

void etcd_world(const std::string& text) {
  ElasticWorld w;
  std::vector<std::string> ids;
  if (!decode_etcd_world(text, &w, &ids).is_ok()) return;
  check_world(w);
  FUZZ_CHECK(ids.size() == w.peers.size());
  for (const std::string& id : ids) FUZZ_CHECK(!id.empty());
  ElasticWorld again;
  std::vector<std::string> ids_again;
  FUZZ_CHECK(decode_etcd_world(encode_etcd_world(w, ids), &again, &ids_again).is_ok());
  w.rank = 0;  // the key holds rank 0's view
  FUZZ_CHECK(same_world(again, w) && ids_again == ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = fuzz_bytes(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: join(text); break;
    case 1: message(text); break;
    case 2: etcd_member(text); break;
    default: etcd_world(text); break;
  }
  return 0;
}
