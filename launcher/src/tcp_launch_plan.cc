#include "tcp_launch_plan.h"

#include <algorithm>
#include <cstdlib>

#include "common/knob_registry.h"
#include "host_list.h"
#include "job_secret.h"
#include "launch_plan.h"
#include "rank_exits.h"

namespace chorus::launcher {

namespace {

// The variables every process of the job gets: the job's, not a rank's.
std::vector<std::pair<std::string, std::string>> job_env(const LaunchOptions& options,
                                                         const TcpLaunchContext& context) {
  std::vector<std::pair<std::string, std::string>> env = {{"CHORUS_TRANSPORT", "tcp"},
                                                          {"CHORUS_JOB_ID", context.job_id}};
  if (!context.secret.empty()) env.emplace_back(kSecretVariable, context.secret);
  for (const auto& knob : options.knobs) env.push_back(knob);
  // --start-timeout: the ranks that started must meet within it.
  if (options.start_timeout_seconds) {
    env.emplace_back("CHORUS_RENDEZVOUS_TIMEOUT_SECONDS", std::to_string(*options.start_timeout_seconds));
  }
  if (options.tune_malloc && !context.user_set_glibc_tunables) env.emplace_back("GLIBC_TUNABLES", kTunedGlibcTunables);
  for (const std::string& x : options.exported_env) {
    const size_t eq = x.find('=');
    if (eq != std::string::npos) {
      env.emplace_back(x.substr(0, eq), x.substr(eq + 1));
    } else if (const char* value = std::getenv(x.c_str())) {
      env.emplace_back(x, value);
    }
  }
  return env;
}

// The variables every rank gets besides its own position.
std::vector<std::pair<std::string, std::string>> common_env(const LaunchOptions& options,
                                                            const TcpLaunchContext& context, const std::string& master,
                                                            int size) {
  std::vector<std::pair<std::string, std::string>> env = {{"MASTER_ADDR", master},
                                                          {"MASTER_PORT", std::to_string(context.master_port)},
                                                          {"WORLD_SIZE", std::to_string(size)}};
  const auto job = job_env(options, context);
  env.insert(env.begin(), job.begin(), job.begin() + 1);  // CHORUS_TRANSPORT first, as before
  env.insert(env.end(), job.begin() + 1, job.end());
  return env;
}

std::string program_not_found(const std::string& program) {
  return "program '" + program + "' was not found (not an executable file, nor on the PATH)";
}

// ssh HOST 'cd DIR && exec env VAR=VALUE... PROGRAM ARGS...': one word for
// the remote shell, every part quoted. The secret comes on stdin instead
// (ps shows command lines, here and on the remote host).
std::vector<std::string> remote_argv(const LaunchOptions& options, const std::string& agent, const std::string& host,
                                     const std::string& cwd, const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> inner = {"env"};
  std::string read_secret;
  for (const auto& [name, value] : env) {
    if (name == kSecretVariable) {
      read_secret = read_secret_from_stdin() + " && ";
    } else {
      inner.push_back(name + "=" + value);
    }
  }
  inner.insert(inner.end(), options.command.begin(), options.command.end());
  std::vector<std::string> argv = {agent};
  if (agent == "ssh") {
    if (options.ssh_port) argv.insert(argv.end(), {"-p", std::to_string(*options.ssh_port)});
    if (options.ssh_identity) argv.insert(argv.end(), {"-i", *options.ssh_identity});
  }
  argv.push_back(host);
  argv.push_back("cd " + quote_command({cwd}) + " && " + read_secret + "exec " + quote_command(inner));
  return argv;
}

bool has_knob(const LaunchOptions& options, const std::string& name) {
  return std::any_of(options.knobs.begin(), options.knobs.end(), [&](const auto& k) { return k.first == name; });
}

// --start-timeout becomes the rendezvous timeout: "" when the core takes
// it, else why not (the knob's own check, as for the tuning flags).
std::string check_start_timeout(const LaunchOptions& options) {
  if (!options.start_timeout_seconds) return "";
  if (has_knob(options, "CHORUS_RENDEZVOUS_TIMEOUT_SECONDS")) {
    return "--start-timeout and --rendezvous-timeout-seconds both set the rendezvous timeout with --tcp: give one";
  }
  for (const detail::Knob& k : detail::knobs()) {
    if (k.variable() != "CHORUS_RENDEZVOUS_TIMEOUT_SECONDS") continue;
    RuntimeOptions scratch;
    const std::string why = k.apply(k, std::to_string(*options.start_timeout_seconds), &scratch).message();
    if (!why.empty()) return "--start-timeout " + std::to_string(*options.start_timeout_seconds) + ": " + why;
  }
  return "";
}

// What rank `c` runs: the program here, or the agent's command for a remote machine.
std::string complete_command(const LaunchOptions& options, const TcpLaunchContext& context, RankCommand* c) {
  if (!c->local) {
    c->argv = remote_argv(options, options.agent.empty() ? "ssh" : options.agent, c->host, context.cwd, c->env);
    if (!context.secret.empty()) c->stdin_text = context.secret + "\n";
    return "";
  }
  if (context.program_path.empty()) return program_not_found(options.command.front());
  c->argv = options.command;
  c->argv.front() = context.program_path;
  if (!context.exit_record_dir.empty() && !context.exit_hook_path.empty()) {
    c->exit_record = context.exit_record_dir + "/" + rank_exit_file(c->rank, RankExit::Source::kExitCall);
    c->exit_hook = context.exit_hook_path;
  }
  return "";
}

}  // namespace

std::string make_tcp_launch(const LaunchOptions& options, const TcpLaunchContext& context,
                            std::vector<RankCommand>* out) {
  out->clear();
  if (std::string why = check_start_timeout(options); !why.empty()) return why;
  std::vector<HostSlots> hosts = options.hosts;
  if (hosts.empty()) hosts.push_back({"localhost", options.num_proc});
  std::vector<Machine> machines;
  std::string why =
      group_by_machine(hosts, context.local_host_names, context.local_addresses, context.resolve, &machines);
  if (!why.empty()) return why;
  int slots = 0;
  bool all_local = true;
  for (const Machine& m : machines) {
    slots += m.slots;
    all_local = all_local && m.local;
  }
  if (options.num_proc > slots) {
    return "-np " + std::to_string(options.num_proc) + " is more than the " + std::to_string(slots) +
           " slots of the host list (--tcp starts at most one rank per slot)";
  }
  // Rank 0's address as every rank can reach it: when rank 0 runs here and
  // others elsewhere, a name of this machine from the list that is not
  // loopback, else this machine's own name.
  std::string master = machines.front().host;
  if (all_local) {
    master = "127.0.0.1";
  } else if (!machines.front().outside_name.empty()) {
    master = machines.front().outside_name;
  } else if (!context.local_host_names.empty()) {
    master = context.local_host_names.front();
  }
  const auto env = common_env(options, context, master, options.num_proc);
  // Ranks fill the machines in order: those that got one are a prefix.
  int used = 0;
  for (int placed = 0; placed < options.num_proc; ++used) placed += machines[static_cast<size_t>(used)].slots;
  for (int m = 0, rank = 0; rank < options.num_proc; ++m) {
    const Machine& machine = machines[static_cast<size_t>(m)];
    const int here = std::min(machine.slots, options.num_proc - rank);
    for (int i = 0; i < here; ++i, ++rank) {
      RankCommand c;
      c.rank = rank;
      c.host = machine.host;
      c.local = machine.local;
      c.env = env;
      // horovodrun --gloo's names too, which Horovod scripts (and Horovod's own tests) read.
      c.env.insert(c.env.end(), {{"HOROVOD_RANK", std::to_string(rank)},
                                 {"HOROVOD_SIZE", std::to_string(options.num_proc)},
                                 {"HOROVOD_LOCAL_RANK", std::to_string(i)},
                                 {"HOROVOD_LOCAL_SIZE", std::to_string(here)},
                                 {"HOROVOD_CROSS_RANK", std::to_string(m)},
                                 {"HOROVOD_CROSS_SIZE", std::to_string(used)},
                                 {"RANK", std::to_string(rank)},
                                 {"LOCAL_RANK", std::to_string(i)},
                                 {"LOCAL_WORLD_SIZE", std::to_string(here)}});
      if (std::string missing = complete_command(options, context, &c); !missing.empty()) return missing;
      out->push_back(std::move(c));
    }
  }
  return "";
}

std::string make_elastic_worker(const LaunchOptions& options, const TcpLaunchContext& context, const Machine& machine,
                                const std::vector<std::pair<std::string, std::string>>& member_env, RankCommand* out) {
  if (std::string why = check_start_timeout(options); !why.empty()) return why;
  *out = RankCommand{};
  out->rank = -1;
  out->host = machine.host;
  out->local = machine.local;
  out->env = job_env(options, context);
  out->env.insert(out->env.end(), member_env.begin(), member_env.end());
  return complete_command(options, context, out);
}

}  // namespace chorus::launcher
