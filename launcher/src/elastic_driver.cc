#include "elastic_driver.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "child_process.h"
#include "common/env_params.h"
#include "common/knob_registry.h"
#include "elastic_plan.h"
#include "host_blacklist.h"
#include "host_discovery.h"
#include "host_failure_budget.h"
#include "host_machines.h"
#include "rendezvous/elastic_rendezvous.h"

namespace chorus::launcher {

namespace {

constexpr double kDiscoveryTimeoutSeconds = 30;  // one run of the script
constexpr double kStopGraceSeconds = 5;          // SIGTERM, then SIGKILL
constexpr int kElasticFailureExitCode = 1;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// How long a member may stay in its old world after another left it
// (stopped, or stuck): CHORUS_ELASTIC_JOIN_GRACE_SECONDS (its knob's check,
// the HOROVOD_ fallback), default 10. A bad value is an error naming it.
std::string join_grace_seconds(double* out) {
  *out = 10.0;
  std::string source;
  const std::optional<std::string> text = detail::read_env("ELASTIC_JOIN_GRACE_SECONDS", &source);
  if (!text) return "";
  for (const detail::Knob& k : detail::knobs()) {
    if (k.variable() != "CHORUS_ELASTIC_JOIN_GRACE_SECONDS") continue;
    RuntimeOptions scratch;
    const Status s = k.apply(k, *text, &scratch);
    if (!s.is_ok()) return source + "='" + *text + "': " + s.message();
  }
  *out = std::strtod(text->c_str(), nullptr);
  return "";
}

// ssh's exit code when it cannot reach the host (or log in); a remote
// worker's agent that exits with it before the worker reached the
// rendezvous means the host cannot be reached, not that the worker failed.
constexpr int kAgentUnreachableExitCode = 255;

struct Worker {
  WorkerSlot slot;
  bool remote = false;  // started through the agent (ssh)
  std::string member_id;
  Child child;
  bool stopping = false;  // the driver ended it: not a failure
  bool retiring = false;  // its host left discovery: it leaves after its step (the rendezvous says when)
  double stop_at = 0;     // when it was told to stop (SIGKILL follows)
};

class ElasticDriver {
 public:
  ElasticDriver(const LaunchOptions& options, const TcpLaunchContext& context)
      : options_(options), elastic_(*options.elastic), context_(context), blacklist_(elastic_.blacklist_cooldown) {}

  int run();

 private:
  std::string start_rendezvous();
  std::string read_failure_budget();
  bool replace_on_host(const Worker& failed, double now);
  std::string nothing_can_come_back(double now);
  std::string discover(bool first);
  void plan_and_apply(double now);
  void start_worker(const WorkerSlot& slot);
  void stop_worker(Worker& w, int sig, double now);
  void retire_worker(Worker& w, double now);
  void note_ends(double now);
  void stop_host(const std::string& host, double now);
  bool drive_rendezvous(double now);
  std::string machine_of(const std::string& host, Machine* out);
  std::string advertised_address();
  int finish(int code, const std::string& why);
  std::vector<Child*> children();

  const LaunchOptions& options_;
  const ElasticOptions& elastic_;
  TcpLaunchContext context_;
  HostBlacklist blacklist_;
  HostFailureBudget budget_{2, 60};  // CHORUS_ELASTIC_HOST_FAILURE_BUDGET / _WINDOW_SECONDS
  std::unique_ptr<detail::ElasticRendezvous> rendezvous_;
  std::vector<HostSlots> discovered_;
  std::set<std::string> warned_;
  std::vector<std::string> host_order_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<std::string, Machine> machines_;
  int next_worker_ = 0;
  double last_discovery_ = -1e9;
  double grace_seconds_ = 10.0;  // CHORUS_ELASTIC_JOIN_GRACE_SECONDS, for the message
  double no_workers_since_ = -1;
  bool finishing_ = false;  // a worker ended with 0: the job is done once the others end
  int exit_code_ = 0;
  std::string failure_;
};

std::string ElasticDriver::machine_of(const std::string& host, Machine* out) {
  auto it = machines_.find(host);
  if (it != machines_.end()) {
    *out = it->second;
    return "";
  }
  std::vector<Machine> found;
  std::string why =
      group_by_machine({{host, 1}}, context_.local_host_names, context_.local_addresses, context_.resolve, &found);
  if (!why.empty()) return why;
  machines_[host] = found.front();
  *out = found.front();
  return "";
}

// Where the workers reach the rendezvous: loopback when every host of the
// job is this machine, else a name of this machine the others can use.
std::string ElasticDriver::advertised_address() {
  std::string outside;
  bool all_local = true;
  for (const HostSlots& h : discovered_) {
    Machine m;
    if (!machine_of(h.host, &m).empty()) continue;
    all_local = all_local && m.local;
    if (m.local && outside.empty()) outside = m.outside_name;
  }
  if (all_local && elastic_.discovery_script.empty()) return "127.0.0.1";
  if (!outside.empty()) return outside;
  return context_.local_host_names.empty() ? "127.0.0.1" : context_.local_host_names.front();
}

std::string ElasticDriver::read_failure_budget() {
  double budget = 2, window = 60;
  chorus::Status s = detail::number_from_environment("ELASTIC_HOST_FAILURE_BUDGET", budget, &budget);
  if (s.is_ok()) s = detail::number_from_environment("ELASTIC_HOST_FAILURE_WINDOW_SECONDS", window, &window);
  if (!s.is_ok()) return s.message();
  budget_ = HostFailureBudget(static_cast<int>(budget), window);
  return "";
}

std::string ElasticDriver::start_rendezvous() {
  detail::ElasticRendezvousSettings s;
  s.formation.min_np = elastic_.min_np;
  s.formation.max_np = elastic_.max_np.value_or(std::numeric_limits<int>::max());
  s.formation.elastic_timeout_seconds = elastic_.elastic_timeout_seconds;
  if (std::string why = join_grace_seconds(&s.formation.join_grace_seconds); !why.empty()) return why;
  s.address = advertised_address();
  s.job_id = context_.job_id;
  s.auth.secret = context_.secret;
  grace_seconds_ = s.formation.join_grace_seconds;
  Status st = detail::ElasticRendezvous::start(std::move(s), &rendezvous_);
  return st.is_ok() ? "" : "cannot start the elastic rendezvous: " + st.message();
}

// The hosts now: the script's (a failure at the start ends the job; later
// ones keep the last hosts, said once per message), or the fixed list.
std::string ElasticDriver::discover(bool first) {
  if (elastic_.discovery_script.empty()) {
    if (first)
      discovered_ = options_.hosts.empty() ? std::vector<HostSlots>{{"localhost", options_.num_proc}} : options_.hosts;
    return "";
  }
  DiscoveryResult r =
      run_discovery_script(elastic_.discovery_script, elastic_.slots_per_host, kDiscoveryTimeoutSeconds);
  for (const std::string& w : r.warnings) {
    if (warned_.insert(w).second) std::cerr << "chorusrun: warning: " << w << "\n";
  }
  if (!r.error.empty()) {
    if (first) return r.error;
    if (warned_.insert(r.error).second) std::cerr << "chorusrun: warning: " << r.error << " (keeping the last hosts)\n";
    return "";
  }
  if (!first && r.hosts != discovered_ && options_.verbose) std::cerr << "chorusrun: the discovered hosts changed\n";
  discovered_ = std::move(r.hosts);
  return "";
}

std::vector<Child*> ElasticDriver::children() {
  std::vector<Child*> out;
  for (auto& w : workers_) out.push_back(&w->child);
  return out;
}

void ElasticDriver::start_worker(const WorkerSlot& slot) {
  Machine machine;
  std::string why = machine_of(slot.host, &machine);
  auto w = std::make_unique<Worker>();
  w->slot = slot;
  w->remote = why.empty() && !machine.local;
  w->member_id = slot.host + ":" + std::to_string(slot.local_slot) + "#" + std::to_string(++next_worker_);
  RankCommand c;
  if (why.empty()) {
    why = make_elastic_worker(
        options_, context_, machine,
        {{"CHORUS_ELASTIC_ADDR", rendezvous_->address() + ":" + std::to_string(rendezvous_->port())},
         {"CHORUS_ELASTIC_MEMBER", w->member_id}},
        &c);
  }
  w->child.rank = next_worker_;
  w->child.out.terminal = stdout;
  w->child.err.terminal = stderr;
  if (why.empty() && !start_child(c, &w->child)) why = std::string("cannot start it: ") + std::strerror(errno);
  if (!why.empty()) {
    std::cerr << "chorusrun: worker " << next_worker_ << " on " << slot.host << ": " << why << "\n";
    blacklist_.record_failure(slot.host, now_seconds());
    return;
  }
  if (options_.verbose) {
    std::cerr << "chorusrun: worker " << next_worker_ << " started on " << slot.host << " (slot " << slot.local_slot
              << ")\n";
  }
  rendezvous_->expect(w->member_id);
  workers_.push_back(std::move(w));
}

void ElasticDriver::stop_worker(Worker& w, int sig, double now) {
  if (!w.stopping) w.stop_at = now;
  w.stopping = true;
  signal_child(w.child, sig);
}

// A worker no longer planned (its host left discovery, or has fewer slots)
// finishes its step: the others are told the hosts were removed and agree
// at their next commit(); it leaves when it asks for the next world
// (drive_rendezvous). Nothing is rolled back. One in no world stops now.
void ElasticDriver::retire_worker(Worker& w, double now) {
  if (!rendezvous_->retire(w.member_id)) {
    std::cerr << "chorusrun: stopping worker " << w.child.rank << " on " << w.slot.host << " (no longer planned)\n";
    stop_worker(w, SIGTERM, now);
    return;
  }
  w.retiring = true;
  std::cerr << "chorusrun: worker " << w.child.rank << " on " << w.slot.host
            << " leaves after its step (discovery no longer lists its slot): the others go on at their next "
               "commit()\n";
}

// The plan for the hosts usable now; the difference is started and retired.
void ElasticDriver::plan_and_apply(double now) {
  std::vector<WorkerSlot> running;
  for (auto& w : workers_) {
    if (!w->stopping && !w->retiring && !w->child.exited) running.push_back(w->slot);
  }
  const std::vector<HostSlots> usable = usable_hosts(discovered_, blacklist_.blacklisted_hosts(now), host_order_);
  std::optional<int> limit = elastic_.max_np;
  if (!limit && elastic_.discovery_script.empty()) limit = options_.num_proc;  // fixed hosts: -np workers
  const std::vector<WorkerSlot> plan = plan_workers(usable, limit, running);
  host_order_ = hosts_of(plan);
  const WorkerChanges changes = diff_workers(running, plan);
  bool retired = false;
  for (const WorkerSlot& s : changes.stop) {
    for (auto& w : workers_) {
      if (w->slot == s && !w->stopping && !w->retiring && !w->child.exited) {
        retire_worker(*w, now);
        retired = retired || w->retiring;
      }
    }
  }
  if (retired) rendezvous_->hosts_changed(detail::kHostsRemoved);
  if (finishing_) return;
  for (const WorkerSlot& s : changes.start) start_worker(s);
}

// A worker that ended: the rendezvous forgets it; a failure the driver did
// not cause puts its host on the blacklist; a success finishes the job.
void ElasticDriver::note_ends(double now) {
  for (auto& w : workers_) {
    RankExit e;
    if (w->stopping && !w->child.exited && now - w->stop_at > kStopGraceSeconds) signal_child(w->child, SIGKILL);
    if (!note_exit(w->child, &e)) continue;
    const bool reached_rendezvous = rendezvous_->has_asked(w->member_id);
    rendezvous_->gone(w->member_id);
    if (!e.failed()) {
      finishing_ = true;
      continue;
    }
    if (w->stopping) continue;
    const std::string how =
        e.signaled ? "was killed by signal " + std::to_string(e.value) : "exited with code " + std::to_string(e.value);
    std::cerr << "chorusrun: worker " << w->child.rank << " on " << w->slot.host << " " << how;
    if (finishing_) {
      std::cerr << " after another finished\n";
      exit_code_ = e.signaled ? 128 + e.value : e.value;
      continue;
    }
    const bool unreachable = w->remote && !e.signaled && e.value == kAgentUnreachableExitCode && !reached_rendezvous;
    if (unreachable) {
      std::cerr << " before it reached the rendezvous: the agent could not reach the host";
    } else if (replace_on_host(*w, now)) {
      continue;
    }
    const bool out = blacklist_.record_failure(w->slot.host, now);
    std::cerr << (out ? "; its host is blacklisted" : "") << "\n";
    if (out) stop_host(w->slot.host, now);
  }
}

// A worker that failed while others of its host run is replaced there
// (the next plan starts one in its slot), within the host's failure budget.
bool ElasticDriver::replace_on_host(const Worker& failed, double now) {
  const bool others_run = std::any_of(workers_.begin(), workers_.end(), [&](const auto& w) {
    return w.get() != &failed && w->slot.host == failed.slot.host && !w->stopping && !w->child.exited;
  });
  if (!others_run || !budget_.record(failed.slot.host, now)) return false;
  std::cerr << "; replaced on its host (failure " << budget_.failures(failed.slot.host, now) << " of the "
            << budget_.budget() << " CHORUS_ELASTIC_HOST_FAILURE_BUDGET allows within " << budget_.window_seconds()
            << " s)\n";
  return true;
}

// With fixed hosts and no cooldown, once every host is blacklisted and no
// worker runs, none can ever come back: say so now, not after --elastic-timeout.
std::string ElasticDriver::nothing_can_come_back(double now) {
  if (!elastic_.discovery_script.empty() || elastic_.blacklist_cooldown || finishing_) return "";
  for (const auto& w : workers_) {
    if (!w->child.exited) return "";
  }
  if (!usable_hosts(discovered_, blacklist_.blacklisted_hosts(now), host_order_).empty()) return "";
  return "every host of the job failed and is blacklisted for good (fixed hosts, no --blacklist-cooldown-range): "
         "no worker can come back";
}

// The other workers of a host just blacklisted go now, with the failed one,
// so the survivors form one new world, not one per worker of that host.
void ElasticDriver::stop_host(const std::string& host, double now) {
  for (auto& w : workers_) {
    if (w->slot.host != host || w->stopping || w->child.exited) continue;
    std::cerr << "chorusrun: stopping worker " << w->child.rank << " on " << host << " (its host is blacklisted)\n";
    stop_worker(*w, SIGTERM, now);
  }
}

bool ElasticDriver::drive_rendezvous(double now) {
  const detail::ElasticRendezvous::Events ev = rendezvous_->run_for(0.02);
  for (const std::string& id : ev.left) {
    for (auto& w : workers_) {
      if (w->member_id != id || w->stopping) continue;
      std::cerr << "chorusrun: worker " << w->child.rank << " on " << w->slot.host
                << " left after its last committed step (discovery no longer lists its slot)\n";
      stop_worker(*w, SIGTERM, now);
    }
  }
  for (const std::string& id : ev.late) {
    for (auto& w : workers_) {
      if (w->member_id != id || w->stopping) continue;
      std::cerr << "chorusrun: worker " << w->child.rank << " on " << w->slot.host
                << " did not leave its old world within " << grace_seconds_
                << " s after the others (stopped or stuck): ending it\n";
      blacklist_.record_failure(w->slot.host, now);
      stop_worker(*w, SIGKILL, now);
    }
  }
  if (!ev.failure.empty()) {
    failure_ = ev.failure;
    return false;
  }
  const int64_t resets = std::max<int64_t>(0, ev.worlds_formed - 1);
  if (elastic_.reset_limit && resets > *elastic_.reset_limit) {
    failure_ = "the job was reset " + std::to_string(resets) + (resets == 1 ? " time" : " times") +
               ", more than --reset-limit " + std::to_string(*elastic_.reset_limit);
    return false;
  }
  return true;
}

int ElasticDriver::finish(int code, const std::string& why) {
  if (!why.empty()) std::cerr << "chorusrun: error: " << why << "; exit code " << code << "\n";
  const double now = now_seconds();
  for (auto& w : workers_) {
    if (!w->child.exited) stop_worker(*w, SIGTERM, now);
  }
  for (bool any = true; any;) {
    relay_ready(children());
    any = false;
    for (auto& w : workers_) {
      RankExit e;
      note_exit(w->child, &e);
      if (!w->child.exited && now_seconds() - w->stop_at > kStopGraceSeconds) signal_child(w->child, SIGKILL);
      any = any || !w->child.exited;
    }
  }
  for (auto& w : workers_) {
    if (w->child.pid > 0) waitpid(w->child.pid, nullptr, 0);
    close_child_streams(w->child, true);
  }
  return code;
}

int ElasticDriver::run() {
  forward_signals();
  if (std::string why = discover(true); !why.empty()) return finish(2, why);
  if (std::string why = read_failure_budget(); !why.empty()) return finish(2, why);
  if (std::string why = start_rendezvous(); !why.empty()) return finish(2, why);
  for (;;) {
    const double now = now_seconds();
    if (const int sig = take_received_signal(); sig != 0) {
      for (auto& w : workers_) stop_worker(*w, sig, now);
      return finish(128 + sig, "");
    }
    if (now - last_discovery_ >= elastic_.discovery_interval_seconds) {
      discover(false);
      last_discovery_ = now;
      plan_and_apply(now);
    }
    relay_ready(children(), 10);  // then the rendezvous's 20 ms: a join waits 30 ms at most
    note_ends(now);
    if (std::string why = nothing_can_come_back(now); !why.empty()) return finish(kElasticFailureExitCode, why);
    if (!drive_rendezvous(now)) return finish(kElasticFailureExitCode, failure_);
    const bool any_running =
        std::any_of(workers_.begin(), workers_.end(), [](const auto& w) { return !w->child.exited; });
    if (finishing_ && !any_running) return finish(exit_code_, "");
    if (any_running) {
      no_workers_since_ = -1;
    } else if (no_workers_since_ < 0) {
      no_workers_since_ = now;
    } else if (now - no_workers_since_ >= elastic_.elastic_timeout_seconds) {
      return finish(kElasticFailureExitCode,
                    "no worker ran for " + std::to_string(static_cast<int64_t>(now - no_workers_since_)) +
                        " s (--elastic-timeout " +
                        std::to_string(static_cast<int64_t>(elastic_.elastic_timeout_seconds)) +
                        "): every host failed, is blacklisted, or none was found");
    }
  }
}

}  // namespace

int run_elastic_job(const LaunchOptions& options, const TcpLaunchContext& context) {
  ElasticDriver driver(options, context);
  return driver.run();
}

}  // namespace chorus::launcher
