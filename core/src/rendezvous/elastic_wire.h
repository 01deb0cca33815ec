#pragma once
// The messages between an elastic job's members and its rendezvous
// (rendezvous/elastic_member.h, rendezvous/elastic_rendezvous.h): text, one per
// length-prefixed frame (net/tcp_wire.h), after the connection proved
// the job's secret (purpose kElastic). Pure functions, tested alone.
//
//   member -> rendezvous  join: ready for a new world (member id, host id,
//                         the port of the listener it holds for the mesh)
//   rendezvous -> member  world: its rank, every rank's host id, address and
//                         port, the mesh's key and job id (one per world)
//                         error: no world will form (the reason)
//                         hosts: the hosts changed (a generation, what changed)
//
// Without a launcher, the same messages are the values of the job's keys
// in etcd (rendezvous/etcd_rendezvous.h): a member's key holds its join, the
// address it is reached at and the last world it was in; the world key
// holds a world (rank 0's view) after the members' ids in rank order; the
// hosts key a hosts message; the failure key an error message.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "rendezvous/tcp_rendezvous.h"

namespace chorus::detail {

struct ElasticJoin {
  std::string member_id;  // stable for the process's life (the launcher's host/slot)
  std::string host_id;    // this_host_id(): ranks with the same one share memory
  int port = 0;           // the member's listener for the new mesh
};

struct ElasticWorld {
  int64_t version = 0;  // 1, 2, ...: one per world the rendezvous formed
  int rank = 0;
  uint64_t key = 0;
  int64_t hosts_generation = 0;    // notices up to this one came before the world: not news to it
  std::string job_id;              // the mesh's: the job's id and the version
  std::vector<TcpPeerInfo> peers;  // by rank
};

/// Bits of ElasticHostsNotice::kinds (Horovod's HostUpdateResult).
constexpr int kHostsAdded = 1;
constexpr int kHostsRemoved = 2;

struct ElasticHostsNotice {
  int64_t generation = 0;  // grows with every change; 0: none yet
  int kinds = 0;           // kHostsAdded | kHostsRemoved
};

std::string encode_join(const ElasticJoin& join);
Status decode_join(const std::string& text, ElasticJoin* out);
std::string encode_world(const ElasticWorld& world);
std::string encode_error(const std::string& message);
std::string encode_hosts(const ElasticHostsNotice& notice);

/// What a member received: exactly one of the three is filled.
struct ElasticMessage {
  enum class Kind { kWorld, kError, kHosts } kind = Kind::kError;
  ElasticWorld world;
  std::string error;
  ElasticHostsNotice hosts;
};
/// Decodes any rendezvous -> member message; garbage is an error naming it.
Status decode_message(const std::string& text, ElasticMessage* out);

/// A member's key in etcd: its join, its address, and the version of the
/// last world it was in (0: none); it waits for a world later than that one.
struct EtcdMemberValue {
  ElasticJoin join;
  std::string address;
  int64_t after = 0;
};
std::string encode_etcd_member(const EtcdMemberValue& member);
Status decode_etcd_member(const std::string& text, EtcdMemberValue* out);
/// The world key in etcd: the world (its rank field unused) and the
/// members' ids, both in rank order.
std::string encode_etcd_world(const ElasticWorld& world, const std::vector<std::string>& member_ids);
Status decode_etcd_world(const std::string& text, ElasticWorld* world, std::vector<std::string>* member_ids);

}  // namespace chorus::detail
