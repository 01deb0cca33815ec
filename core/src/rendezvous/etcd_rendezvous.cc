// rendezvous/etcd_rendezvous.h: a member's side of the rendezvous in etcd
// (join, its lease, its thread, leading when its turn comes) and the
// variables that select it.
#include "rendezvous/etcd_rendezvous.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "common/env_params.h"
#include "common/knob_registry.h"
#include "common/logging.h"
#include "net/tcp_handshake.h"
#include "rendezvous/tcp_secret.h"

namespace chorus::detail {

namespace {

constexpr int64_t kLeaseSeconds = 5;
constexpr auto kKeepAliveEvery = std::chrono::seconds(1);
constexpr auto kLeaderRound = std::chrono::milliseconds(100);
constexpr auto kLeadTryEvery = std::chrono::milliseconds(500);
constexpr auto kNoticeEvery = std::chrono::milliseconds(500);
constexpr auto kWorldPoll = std::chrono::milliseconds(100);
constexpr auto kRequestBound = std::chrono::seconds(2);   // one request of the thread, or one poll of join
constexpr auto kFirstContact = std::chrono::seconds(10);  // etcd may be starting

Clock::duration seconds_duration(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

Deadline bound(Deadline deadline = Deadline::max()) { return std::min(deadline, Clock::now() + kRequestBound); }

double seconds_now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

}  // namespace

EtcdRendezvous::EtcdRendezvous(EtcdRendezvousSettings settings, std::string member_id)
    : settings_(std::move(settings)),
      member_id_(std::move(member_id)),
      joiner_(settings_.connection),
      keeper_(settings_.connection) {}

EtcdRendezvous::~EtcdRendezvous() { leave(); }

// The lease and the thread that keeps it, at the first join.
Status EtcdRendezvous::start(Deadline deadline) {
  if (thread_.joinable()) return Status::ok();
  int64_t lease = 0;
  for (;;) {  // etcd may be starting: again while nothing answers (a refusal fails at once)
    Status s = joiner_.grant(kLeaseSeconds, bound(deadline), &lease);
    if (s.is_ok()) break;
    // The last try's reason, not "no time left": no try starts too late.
    if (s.code() != StatusCode::kTimeout || Clock::now() + 2 * kWorldPoll >= deadline) return s;
    std::this_thread::sleep_for(kWorldPoll);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_ = lease;
  }
  owner_ = getpid();
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

Status EtcdRendezvous::put_member(EtcdClient& client, Deadline deadline, int64_t* revision) {
  std::lock_guard<std::mutex> put_lock(put_mu_);
  std::string value;
  int64_t lease = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    value = value_;
    lease = lease_;
  }
  if (value.empty()) return Status::ok();
  return client.put(key("members/" + member_id_), value, lease, deadline, revision);
}

// The member key says this member waits for a world after its last one,
// reached at the address it reaches etcd from. Retried while etcd is away
// or the thread renews a lost lease.
Status EtcdRendezvous::ask(int port, Deadline deadline, int64_t* asked_at) {
  std::string address;
  Status s = joiner_.local_address(bound(deadline), &address);
  if (!s.is_ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_world_ = false;
    value_ = encode_etcd_member({{member_id_, this_host_id(), port}, address, version_});
  }
  for (;;) {
    s = put_member(joiner_, bound(deadline), asked_at);
    if (s.is_ok() || Clock::now() >= deadline) return s;
    std::this_thread::sleep_for(kWorldPoll);
  }
}

// Until a world newer than this member's last lists it, or the leader
// writes a failure after this member asked.
Status EtcdRendezvous::await(Deadline deadline, int64_t asked_at, ElasticWorld* world, std::vector<std::string>* ids) {
  int64_t last = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = version_;
  }
  std::vector<EtcdKeyValue> kvs;
  for (int poll = 1;; ++poll) {
    if (joiner_.get(key("world"), bound(deadline), &kvs).is_ok() && !kvs.empty() &&
        decode_etcd_world(kvs[0].value, world, ids).is_ok() && world->version > last &&
        std::find(ids->begin(), ids->end(), member_id_) != ids->end()) {
      return Status::ok();
    }
    if (joiner_.get(key("failure"), bound(deadline), &kvs).is_ok() && !kvs.empty() && kvs[0].mod_revision > asked_at) {
      ElasticMessage m;
      const bool known = decode_message(kvs[0].value, &m).is_ok() && m.kind == ElasticMessage::Kind::kError;
      return Status::aborted("elastic job '" + settings_.job + "' (etcd at " + joiner_.endpoints_text() +
                             "): " + (known ? m.error : kvs[0].value));
    }
    if (Clock::now() >= deadline) return Status::timeout("");
    // Once a second: the key still there? A leader that found this member
    // late deleted it; asking again makes it a newcomer.
    if (poll % 10 == 0 && joiner_.get(key("members/" + member_id_), bound(deadline), &kvs).is_ok() && kvs.empty()) {
      put_member(joiner_, bound(deadline), &asked_at);
    }
    std::this_thread::sleep_for(kWorldPoll);
  }
}

Status EtcdRendezvous::join(double timeout_seconds, TcpWorld* world, int* rank) {
  std::lock_guard<std::mutex> join_lock(join_mu_);
  const double wait = std::max(timeout_seconds, settings_.formation.elastic_timeout_seconds + 10.0);
  const Deadline deadline = Clock::now() + seconds_duration(wait);
  Status s = start(std::min(deadline, Clock::now() + kFirstContact));
  TcpWorld w;
  int port = 0;
  if (s.is_ok()) s = listen_on("", 0, &w.listener, &port);
  int64_t asked_at = 0;
  if (s.is_ok()) s = ask(port, deadline, &asked_at);
  ElasticWorld formed;
  std::vector<std::string> ids;
  if (s.is_ok()) s = await(deadline, asked_at, &formed, &ids);
  if (s.code() == StatusCode::kTimeout && s.message().empty()) {
    return Status::timeout("elastic member " + member_id_ + ": no world formed within " + std::to_string(wait) +
                           " s (etcd at " + joiner_.endpoints_text() + ", job '" + settings_.job + "')");
  }
  if (!s.is_ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    version_ = formed.version;
    baseline_ = formed.hosts_generation;
    notice_ = {};
    in_world_ = true;
    world_ids_ = ids;
    lost_.clear();
  }
  *rank = static_cast<int>(std::find(ids.begin(), ids.end(), member_id_) - ids.begin());
  w.peers = std::move(formed.peers);
  w.key = formed.key;
  w.job_id = formed.job_id;
  *world = std::move(w);
  return Status::ok();
}

ElasticHostsNotice EtcdRendezvous::latest_notice() {
  std::lock_guard<std::mutex> lock(mu_);
  return notice_;
}

void EtcdRendezvous::leave() {
  if (thread_.joinable() && getpid() != owner_) return;  // a forked child: the thread and lease are its parent's
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  keeper_.revoke(lease_, Clock::now() + std::chrono::seconds(1));  // the keys go at once
}

void EtcdRendezvous::lost_peers(const std::vector<int>& ranks) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int r : ranks) {
      if (r < 0 || r >= static_cast<int>(world_ids_.size()) || world_ids_[static_cast<size_t>(r)] == member_id_)
        continue;
      lost_.push_back(world_ids_[static_cast<size_t>(r)]);
    }
  }
  wake_.notify_all();
}

// The thread: the lease every second, the leader's rounds (or a try to
// lead), the hosts notice twice a second; lost members at once, then a
// try to lead (the leader may be among them).
void EtcdRendezvous::run() {
  Deadline next_keep = Clock::now(), next_lead = next_keep, next_notice = next_keep;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const bool lost = !lost_.empty();
    lock.unlock();
    if (lost) {
      forget_lost();
      next_lead = Clock::now();
    }
    if (Clock::now() >= next_keep) {
      keep_alive();
      next_keep = Clock::now() + kKeepAliveEvery;
    }
    if (Clock::now() >= next_lead) {
      lead();
      next_lead = Clock::now() + (leader_ ? Clock::duration(kLeaderRound) : Clock::duration(kLeadTryEvery));
    }
    if (Clock::now() >= next_notice) {
      read_notice();
      next_notice = Clock::now() + kNoticeEvery;
    }
    lock.lock();
    wake_.wait_until(lock, std::min({next_keep, next_lead, next_notice}),
                     [this] { return stopping_ || !lost_.empty(); });
  }
}

// A lease that ended (etcd was away longer than it lasts, and lost it):
// a new one, and the member key again under it.
void EtcdRendezvous::keep_alive() {
  int64_t lease = 0, ttl = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease = lease_;
  }
  if (!keeper_.keep_alive(lease, bound(), &ttl).is_ok() || ttl > 0) return;  // away: again in a second
  leader_.reset();                                                           // the leader key went with the lease
  if (!keeper_.grant(kLeaseSeconds, bound(), &lease).is_ok()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_ = lease;
  }
  put_member(keeper_, bound(), nullptr);
}

// Takes the leader key when nobody holds it (or finds it already ours: an
// answer lost on the way), then runs one round.
void EtcdRendezvous::lead() {
  if (!leader_) {
    std::vector<EtcdKeyValue> kvs;
    if (!keeper_.get(key("leader"), bound(), &kvs).is_ok()) return;
    if (kvs.empty()) {
      int64_t lease = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        lease = lease_;
      }
      bool won = false;
      keeper_.txn({key("leader"), true, ""}, {{false, key("leader"), member_id_, lease}}, bound(), &won);
      if (!won) return;
    } else if (kvs[0].value != member_id_) {
      return;
    }
    auto leader = std::make_unique<EtcdLeader>(keeper_, key(""), settings_.job, member_id_, settings_.formation);
    if (!leader->start(bound()).is_ok()) return;
    leader_ = std::move(leader);
  }
  if (!leader_->step(seconds_now(), bound())) leader_.reset();  // lost, or a write failed: start again
}

// The leases of the members this one lost, revoked: their keys go with
// them now (not when the lease ends), the leader key too when one of them
// led. A member wrongly taken for lost (alive behind a cut) finds its lease
// gone, takes a new one and asks again as a newcomer.
void EtcdRendezvous::forget_lost() {
  std::vector<std::string> lost;
  int64_t own = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lost.swap(lost_);
    own = lease_;
  }
  std::sort(lost.begin(), lost.end());
  lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
  for (const std::string& id : lost) {
    std::vector<EtcdKeyValue> kvs;
    if (!keeper_.get(key("members/" + id), bound(), &kvs).is_ok() || kvs.empty()) continue;  // gone already
    if (kvs[0].lease != 0 && kvs[0].lease != own) keeper_.revoke(kvs[0].lease, bound());
  }
}

void EtcdRendezvous::read_notice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_world_) return;
  }
  std::vector<EtcdKeyValue> kvs;
  ElasticMessage m;
  if (!keeper_.get(key("hosts"), bound(), &kvs).is_ok() || kvs.empty()) return;
  if (!decode_message(kvs[0].value, &m).is_ok() || m.kind != ElasticMessage::Kind::kHosts) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_world_ || m.hosts.generation <= baseline_) return;
  notice_.generation = std::max(notice_.generation, m.hosts.generation);
  notice_.kinds |= m.hosts.kinds;
}

namespace {

Status formation_from_environment(FormationSettings* f) {
  double min_np = 1, max_np = 0;
  Status s = number_from_environment("ELASTIC_MIN_NP", 1, &min_np);
  if (s.is_ok()) s = number_from_environment("ELASTIC_MAX_NP", 0, &max_np);
  if (s.is_ok()) s = number_from_environment("ELASTIC_TIMEOUT", 600, &f->elastic_timeout_seconds);
  if (s.is_ok()) s = number_from_environment("ELASTIC_JOIN_GRACE_SECONDS", 10, &f->join_grace_seconds);
  if (!s.is_ok()) return s;
  f->min_np = static_cast<int>(min_np);
  f->max_np = max_np == 0 ? std::numeric_limits<int>::max() : static_cast<int>(max_np);
  if (f->max_np < f->min_np) {
    return Status::invalid_argument("CHORUS_ELASTIC_MAX_NP=" + std::to_string(f->max_np) +
                                    " is below CHORUS_ELASTIC_MIN_NP=" + std::to_string(f->min_np));
  }
  f->min_np_name = "CHORUS_ELASTIC_MIN_NP";
  f->timeout_name = "CHORUS_ELASTIC_TIMEOUT";
  return Status::ok();
}

// Host name, process id and a random part: unique even for a pid reused
// on a host, or a process started again.
std::string fresh_member_id() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  Nonce random{};
  fresh_nonce(&random);
  char tail[16];
  std::snprintf(tail, sizeof tail, "%02x%02x%02x%02x", random[0], random[1], random[2], random[3]);
  std::string name(host);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  return name + ":" + std::to_string(getpid()) + ":" + tail;
}

// CHORUS_RDZV_ENDPOINT, the TLS files, the user: where and how to reach etcd.
Status etcd_connection_from_environment(EtcdConnection* c) {
  const std::optional<std::string> endpoints = read_env("RDZV_ENDPOINT");
  if (!endpoints) {
    return Status::invalid_argument(
        "CHORUS_RDZV_BACKEND=etcd needs CHORUS_RDZV_ENDPOINT (etcd's host:port, or several, comma-separated)");
  }
  Status s = parse_etcd_endpoints(*endpoints, &c->endpoints);
  if (!s.is_ok()) return s;
  c->tls.ca_file = read_env("RDZV_CA_FILE").value_or("");
  c->tls.cert_file = read_env("RDZV_CERT_FILE").value_or("");
  c->tls.key_file = read_env("RDZV_KEY_FILE").value_or("");
  s = check_etcd_tls(c->tls, c->endpoints);
  if (!s.is_ok()) return s;
  c->user = read_env("RDZV_USER").value_or("");
  c->password = read_env("RDZV_PASSWORD").value_or("");
  if (c->user.empty() && !c->password.empty()) {
    return Status::invalid_argument("CHORUS_RDZV_PASSWORD is set but CHORUS_RDZV_USER (the etcd user) is not");
  }
  return Status::ok();
}

}  // namespace

Status etcd_client_from_environment(std::string* member_id, std::unique_ptr<RendezvousClient>* out) {
  const std::string backend = read_env("RDZV_BACKEND").value_or("");
  if (backend != "etcd") {
    return Status::invalid_argument("CHORUS_RDZV_BACKEND='" + backend +
                                    "': the one rendezvous backend without a launcher is 'etcd' (chorusrun holds "
                                    "its jobs' rendezvous itself: leave the variable unset there)");
  }
  EtcdRendezvousSettings settings;
  Status s = etcd_connection_from_environment(&settings.connection);
  if (!s.is_ok()) return s;
  settings.job = read_env("RDZV_ID").value_or("");
  if (settings.job.empty() || settings.job.find_first_of("/ \t\n") != std::string::npos) {
    return Status::invalid_argument(
        "CHORUS_RDZV_BACKEND=etcd needs CHORUS_RDZV_ID, the job's name (no '/' or "
        "blanks; its keys are /chorus/<id>/...), got '" +
        settings.job + "'");
  }
  s = formation_from_environment(&settings.formation);
  if (!s.is_ok()) return s;
  // The secret is checked where it is used (the mesh); without one, say so
  // here, once per process: no rank 0 warns for a job met through etcd.
  const std::vector<EtcdEndpoint>& endpoints = settings.connection.endpoints;
  const bool all_loopback =
      std::all_of(endpoints.begin(), endpoints.end(), [](const EtcdEndpoint& e) { return is_loopback_host(e.host); });
  if (!read_env("SECRET") && !read_env("SECRET_FILE") && !all_loopback) {
    Logger logger;
    CHORUS_LOG(logger, kWarning) << "elastic job '" << settings.job << "' has no secret: any process that reads its "
                                 << "keys in etcd and reaches a worker's port can join its worlds; set "
                                 << "CHORUS_SECRET_FILE or CHORUS_SECRET on every worker (docs/security.md)";
  }
  *member_id = fresh_member_id();
  *out = std::make_unique<EtcdRendezvous>(std::move(settings), *member_id);
  return Status::ok();
}

}  // namespace chorus::detail
