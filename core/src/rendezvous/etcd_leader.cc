// rendezvous/etcd_leader.h: the policy's rounds over the job's keys in etcd.
#include "rendezvous/etcd_leader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "net/tcp_handshake.h"

namespace chorus::detail {

namespace {

constexpr double kFirstWorldSettleSeconds = 1.0;

}  // namespace

EtcdLeader::EtcdLeader(EtcdClient& client, std::string prefix, std::string job, std::string member_id,
                       FormationSettings settings)
    : client_(client),
      prefix_(std::move(prefix)),
      job_(std::move(job)),
      member_id_(std::move(member_id)),
      settings_(std::move(settings)),
      formation_(settings_) {}

Status EtcdLeader::start(Deadline deadline) {
  std::vector<EtcdKeyValue> kvs;
  Status s = client_.get(prefix_ + "world", deadline, &kvs);
  if (!s.is_ok()) return s;
  ElasticWorld world;
  std::vector<std::string> ids;
  if (!kvs.empty() && decode_etcd_world(kvs[0].value, &world, &ids).is_ok()) {
    formation_.adopt(world.version, ids);
    world_ = ids;
    version_ = world.version;
    tracked_.insert(ids.begin(), ids.end());
  }
  s = client_.get(prefix_ + "hosts", deadline, &kvs);
  if (!s.is_ok()) return s;
  ElasticMessage m;
  if (!kvs.empty() && decode_message(kvs[0].value, &m).is_ok() && m.kind == ElasticMessage::Kind::kHosts) {
    generation_ = m.hosts.generation;
    kinds_ = generation_ > world.hosts_generation ? m.hosts.kinds : 0;
  }
  return Status::ok();
}

// The members' keys in the order they were last written (newcomers' ranks
// follow when they asked); each tells whether it waits.
Status EtcdLeader::read_members(double now, Deadline deadline, std::set<std::string>* present) {
  std::vector<EtcdKeyValue> kvs;
  const std::string dir = prefix_ + "members/";
  Status s = client_.get_prefix(dir, deadline, &kvs);
  if (!s.is_ok()) return s;
  std::sort(kvs.begin(), kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.mod_revision < b.mod_revision; });
  members_.clear();
  for (const EtcdKeyValue& kv : kvs) {
    const std::string id = kv.key.substr(dir.size());
    EtcdMemberValue value;
    if (!decode_etcd_member(kv.value, &value).is_ok() || value.join.member_id != id) continue;  // not ours
    const bool in_world = std::find(world_.begin(), world_.end(), id) != world_.end();
    if (!formation_.is_member(id)) formation_.expect(id);
    if (!in_world || value.after >= version_) formation_.joined(id, now);
    members_[id] = std::move(value);
    present->insert(id);
  }
  for (const std::string& id : tracked_) {
    if (present->count(id) == 0) formation_.gone(id);  // its lease ended: the process is gone
  }
  tracked_ = *present;
  return Status::ok();
}

// A world formed from newcomers only waits until nobody came for a while
// (or max_np wait), so that workers started together meet in one world.
bool EtcdLeader::settling(double now, const std::set<std::string>& present) {
  for (const std::string& id : world_) {
    if (present.count(id)) return false;  // the current world's members ask again: form at once
  }
  const int n = static_cast<int>(present.size());
  if (n < settings_.min_np || n >= settings_.max_np) return false;  // below: the policy times it
  if (present != last_present_) {
    last_present_ = present;
    present_since_ = now;
  }
  return now - present_since_ < kFirstWorldSettleSeconds;
}

void EtcdLeader::form(const std::vector<std::string>& ids, std::vector<EtcdOp>* ops) {
  ElasticWorld world;
  world.version = formation_.worlds_formed();
  world.hosts_generation = generation_;
  world.job_id = job_ + "#" + std::to_string(world.version);
  Nonce random{};
  fresh_nonce(&random);
  std::memcpy(&world.key, random.data(), sizeof world.key);
  for (const std::string& id : ids) {
    const EtcdMemberValue& m = members_.at(id);
    world.peers.push_back({m.join.host_id, m.address, m.join.port});
  }
  ops->push_back({false, prefix_ + "world", encode_etcd_world(world, ids), 0});
  ops->push_back({true, prefix_ + "failure", "", 0});
  world_ = ids;
  version_ = world.version;
  kinds_ = 0;
}

bool EtcdLeader::write(const std::vector<EtcdOp>& ops, Deadline deadline) {
  bool held = false;
  const Status s = client_.txn({prefix_ + "leader", false, member_id_}, ops, deadline, &held);
  return s.is_ok() && held;
}

bool EtcdLeader::step(double now, Deadline deadline) {
  std::set<std::string> present;
  if (!read_members(now, deadline, &present).is_ok()) return true;  // etcd away: the next round
  if (failed_ || settling(now, present)) return true;
  WorldFormation::Step step = formation_.step(now);
  std::vector<EtcdOp> ops;
  if (step.interrupt) {
    ++generation_;
    kinds_ |= kHostsAdded;
    ops.push_back({false, prefix_ + "hosts", encode_hosts({generation_, kinds_}), 0});
  }
  for (const std::string& id : step.late) {
    formation_.gone(id);
    tracked_.erase(id);
    ops.push_back({true, prefix_ + "members/" + id, "", 0});
  }
  if (!step.world.empty()) form(step.world, &ops);
  if (!step.failure.empty()) {
    failed_ = true;
    ops.push_back({false, prefix_ + "failure", encode_error(step.failure), 0});
  }
  return ops.empty() || write(ops, deadline);
}

}  // namespace chorus::detail
