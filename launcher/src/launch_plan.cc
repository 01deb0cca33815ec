#include "launch_plan.h"

#include <numeric>

#include "job_secret.h"
#include "rank_exit_reporter.h"

namespace chorus::launcher {

const char* const kTunedGlibcTunables =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296:"
    "glibc.malloc.top_pad=268435456";

namespace {

std::string host_list(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : ",") + h.host + ":" + std::to_string(h.slots);
  return out;
}

}  // namespace

std::string make_launch_plan(const LaunchOptions& o, const LaunchContext& ctx, LaunchPlan* plan) {
  *plan = LaunchPlan();
  if (ctx.program_path.empty()) {  // first: the user's own mistake, whatever the machine has
    return "program '" + (o.command.empty() ? std::string() : o.command.front()) +
           "' was not found (not an executable file, nor on the PATH)";
  }
  if (ctx.mpirun_path.empty()) return "mpirun was not found on the PATH (install openmpi-bin, or start without it: --tcp)";
  plan->hosts = o.hosts.empty() ? std::vector<HostSlots>{{"localhost", o.num_proc}} : o.hosts;
  for (const auto& h : plan->hosts) plan->all_local = plan->all_local && is_local_host(h.host, ctx.local_host_names);
  const int slots = std::accumulate(plan->hosts.begin(), plan->hosts.end(), 0,
                                    [](int n, const HostSlots& h) { return n + h.slots; });
  if (o.num_proc > slots) {
    if (!plan->all_local) {
      return "-np " + std::to_string(o.num_proc) + " is more ranks than the " + std::to_string(slots) +
             " slots of " + host_list(plan->hosts);
    }
    plan->oversubscribe = true;  // one machine: more ranks than slots is allowed
  }

  plan->env = o.knobs;
  if (o.tune_malloc && !ctx.user_set_glibc_tunables) plan->env.emplace_back("GLIBC_TUNABLES", kTunedGlibcTunables);

  auto& a = plan->argv;
  a = {ctx.mpirun_path};
  if (ctx.is_root) a.push_back("--allow-run-as-root");
  a.insert(a.end(), {"-np", std::to_string(o.num_proc), "-H", host_list(plan->hosts), "-bind-to", "none",
                     "-map-by", "slot"});
  if (plan->oversubscribe) a.push_back("--oversubscribe");
  if (plan->all_local) {
    // A local job talks over loopback only and listens on no outside address.
    a.insert(a.end(), {"--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo"});
    // As many ranks as cores or more: a rank waiting inside MPI must give its
    // core to the rank it waits for (or to a rank's compute thread), or each
    // wait lasts a scheduler time slice (measured: 16 ms instead of 0.2 ms per
    // small allreduce at 3 ranks on 2 cores; ResNet-18 at 2 ranks on 2 cores:
    // docs/performance.md).
    if (o.num_proc >= ctx.local_cores) a.insert(a.end(), {"--mca", "mpi_yield_when_idle", "1"});
  }
  std::string rsh_args;
  if (o.ssh_port) rsh_args += "-p " + std::to_string(*o.ssh_port);
  if (o.ssh_identity) rsh_args += (rsh_args.empty() ? "" : " ") + std::string("-i ") + *o.ssh_identity;
  if (!rsh_args.empty()) a.insert(a.end(), {"--mca", "plm_rsh_args", rsh_args});
  if (o.start_timeout_seconds) {
    a.insert(a.end(), {"--mca", "orte_startup_timeout", std::to_string(*o.start_timeout_seconds)});
  }
  if (o.output_dir) a.insert(a.end(), {"--output-filename", *o.output_dir});
  for (const auto& [name, value] : plan->env) a.insert(a.end(), {"-x", name + "=" + value});
  // The job's secret by name only: its value stays off mpirun's command line.
  if (ctx.pass_secret) a.insert(a.end(), {"-x", kSecretVariable});
  for (const std::string& v : o.exported_env) a.insert(a.end(), {"-x", v});
  a.insert(a.end(), o.mpi_args.begin(), o.mpi_args.end());
  // A local job: each rank runs under chorusrun's reporter, so chorusrun
  // can name the rank that failed first (docs/launcher.md, "Exit codes").
  if (plan->all_local && o.rank_exit_report && !ctx.self_path.empty() && !ctx.exit_record_dir.empty()) {
    plan->exit_record_dir = ctx.exit_record_dir;
    a.insert(a.end(), {ctx.self_path, kRankExitReporterFlag, ctx.exit_record_dir,
                       ctx.exit_hook_path.empty() ? "-" : ctx.exit_hook_path});
  }
  a.push_back(ctx.program_path);
  a.insert(a.end(), o.command.begin() + 1, o.command.end());
  return "";
}

std::string quote_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& w : argv) {
    const bool plain = !w.empty() && w.find_first_not_of(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=,+@%") == std::string::npos;
    std::string q = w;
    if (!plain) {
      q = "'";
      for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    out += (out.empty() ? "" : " ") + q;
  }
  return out;
}

}  // namespace chorus::launcher
