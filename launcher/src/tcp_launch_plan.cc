#include "tcp_launch_plan.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "common/knob_registry.h"
#include "host_list.h"
#include "launch_plan.h"
#include "rank_exits.h"

namespace chorus::launcher {

namespace {

// The variables every rank gets besides its own position.
std::vector<std::pair<std::string, std::string>> common_env(const LaunchOptions& options,
                                                            const TcpLaunchContext& context,
                                                            const std::string& master, int size) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"CHORUS_TRANSPORT", "tcp"},
      {"MASTER_ADDR", master},
      {"MASTER_PORT", std::to_string(context.master_port)},
      {"WORLD_SIZE", std::to_string(size)},
      {"CHORUS_JOB_ID", context.job_id}};
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

std::string program_not_found(const std::string& program) {
  return "program '" + program + "' was not found (not an executable file, nor on the PATH)";
}

// ssh HOST 'cd DIR && exec env VAR=VALUE... PROGRAM ARGS...': one word for
// the remote shell, every part quoted.
std::vector<std::string> remote_argv(const LaunchOptions& options, const std::string& agent, const std::string& host,
                                     const std::string& cwd, const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> inner = {"env"};
  for (const auto& [name, value] : env) inner.push_back(name + "=" + value);
  inner.insert(inner.end(), options.command.begin(), options.command.end());
  std::vector<std::string> argv = {agent};
  if (agent == "ssh") {
    if (options.ssh_port) argv.insert(argv.end(), {"-p", std::to_string(*options.ssh_port)});
    if (options.ssh_identity) argv.insert(argv.end(), {"-i", *options.ssh_identity});
  }
  argv.push_back(host);
  argv.push_back("cd " + quote_command({cwd}) + " && exec " + quote_command(inner));
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

}  // namespace

std::string make_tcp_launch(const LaunchOptions& options, const TcpLaunchContext& context,
                            std::vector<RankCommand>* out) {
  out->clear();
  if (std::string why = check_start_timeout(options); !why.empty()) return why;
  std::vector<HostSlots> hosts = options.hosts;
  if (hosts.empty()) hosts.push_back({"localhost", options.num_proc});
  int slots = 0;
  bool all_local = true;
  for (const HostSlots& h : hosts) {
    slots += h.slots;
    all_local = all_local && is_local_host(h.host, context.local_host_names);
  }
  if (options.num_proc > slots) {
    return "-np " + std::to_string(options.num_proc) + " is more than the " + std::to_string(slots) +
           " slots of the host list (--tcp starts at most one rank per slot)";
  }
  // Rank 0's address as every rank can reach it: this machine's name when
  // rank 0 runs here and others elsewhere.
  std::string master = hosts.front().host;
  if (all_local) {
    master = "127.0.0.1";
  } else if (is_local_host(master, context.local_host_names) && !context.local_host_names.empty()) {
    master = context.local_host_names.front();
  }
  const auto env = common_env(options, context, master, options.num_proc);
  const std::string agent = options.agent.empty() ? "ssh" : options.agent;
  // LOCAL_RANK counts the ranks of one machine, however the list names it
  // (-H localhost:1,127.0.0.1:1 is one machine; so is a host listed twice).
  const auto machine = [&](const std::string& host) {
    return is_local_host(host, context.local_host_names) ? std::string() : host;
  };
  std::map<std::string, int> on_machine, placed, machine_index;
  int counted = 0;
  for (const HostSlots& h : hosts) {
    const int here = std::min(h.slots, options.num_proc - counted);
    on_machine[machine(h.host)] += here;
    if (here > 0) machine_index.emplace(machine(h.host), static_cast<int>(machine_index.size()));
    counted += here;
  }
  int rank = 0;
  for (const HostSlots& h : hosts) {
    const int here = std::min(h.slots, options.num_proc - rank);
    for (int i = 0; i < here; ++i, ++rank) {
      RankCommand c;
      c.rank = rank;
      c.host = h.host;
      c.local = is_local_host(h.host, context.local_host_names);
      c.env = env;
      const std::string local_rank = std::to_string(placed[machine(h.host)]++);
      const std::string local_size = std::to_string(on_machine[machine(h.host)]);
      // horovodrun --gloo's names too, which Horovod scripts (and Horovod's own tests) read.
      c.env.insert(c.env.end(), {{"HOROVOD_RANK", std::to_string(rank)},
                                 {"HOROVOD_SIZE", std::to_string(options.num_proc)},
                                 {"HOROVOD_LOCAL_RANK", local_rank},
                                 {"HOROVOD_LOCAL_SIZE", local_size},
                                 {"HOROVOD_CROSS_RANK", std::to_string(machine_index[machine(h.host)])},
                                 {"HOROVOD_CROSS_SIZE", std::to_string(machine_index.size())},
                                 {"RANK", std::to_string(rank)},
                                 {"LOCAL_RANK", local_rank},
                                 {"LOCAL_WORLD_SIZE", local_size}});
      if (c.local) {
        if (context.program_path.empty()) return program_not_found(options.command.front());
        c.argv = options.command;
        c.argv.front() = context.program_path;
        if (!context.exit_record_dir.empty() && !context.exit_hook_path.empty()) {
          c.exit_record = context.exit_record_dir + "/" + rank_exit_file(rank, RankExit::Source::kExitCall);
          c.exit_hook = context.exit_hook_path;
        }
      } else {
        c.argv = remote_argv(options, agent, h.host, context.cwd, c.env);
      }
      out->push_back(std::move(c));
    }
  }
  return "";
}

}  // namespace chorus::launcher
