// chorusrun: a horovodrun-style launcher over Open MPI.
//   chorusrun -np 4 ./train
//   chorusrun -np 8 -H a:4,b:4 ./train --epochs 3
// Parses options, looks at this machine, builds the mpirun argument vector
// (launch_plan.cc) and runs it. See docs/launcher.md.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "check_build.h"
#include "elastic_driver.h"
#include "exit_record_dir.h"
#include "host_machines.h"
#include "job_secret.h"
#include "launch_options.h"
#include "launch_plan.h"
#include "process_runner.h"
#include "rank_exit_reporter.h"
#include "rank_exits.h"
#include "rank_group_runner.h"
#include "tcp_launch_plan.h"

namespace {

using namespace chorus::launcher;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// A name with a '/' is a path; otherwise it is looked up on the PATH.
std::string resolve_executable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  return "";
}

std::vector<std::string> local_host_names() {
  char name[256] = {0};
  std::vector<std::string> names;
  if (gethostname(name, sizeof(name) - 1) == 0) {
    names.emplace_back(name);
    const std::string full(name);
    if (full.find('.') != std::string::npos) names.push_back(full.substr(0, full.find('.')));
  }
  return names;
}

// A port nobody listens at now (the kernel's pick), for rank 0's rendezvous.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

int fail(const std::string& message) {
  std::cerr << "chorusrun: error: " << message << "\n";
  return 2;
}

std::string this_executable() {
  char path[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

// The job's exit code: the first failing rank's own code when the ranks
// recorded how they ended, else mpirun's. A job stopped by a SIGINT or
// SIGTERM to chorusrun ends with mpirun's code: its ranks ended because
// they were told to.
int job_exit_code(const LaunchPlan& plan, int mpirun_code, int received_signal) {
  if (plan.exit_record_dir.empty() || received_signal != 0) return mpirun_code;
  int code = mpirun_code;
  const std::string line = first_failure_line(read_rank_exits(plan.exit_record_dir), &code);
  if (!line.empty()) std::cerr << "chorusrun: " << line << "; exit code " << code << "\n";
  return code;
}

// --tcp with --verbose or --dry-run: what each rank runs.
void print_rank_commands(const std::vector<RankCommand>& ranks) {
  for (const RankCommand& r : ranks) {
    std::string env;
    for (const auto& [name, value] : r.env) env += name + "=" + (name == kSecretVariable ? "(hidden)" : value) + " ";
    std::cout << "rank " << r.rank << " on " << r.host << ": " << (r.local ? env : "") << quote_command(r.argv);
    if (!r.exit_hook.empty()) std::cout << " (exit hook " << r.exit_hook << ", record " << r.exit_record << ")";
    std::cout << std::endl;
  }
}

// What every process of a job without mpirun shares: this machine, the
// job's id and secret (an error line when no secret could be made).
std::string tcp_context(const LaunchContext& context, TcpLaunchContext* tcp) {
  tcp->local_host_names = context.local_host_names;
  tcp->local_addresses = local_addresses();
  tcp->resolve = resolve_host;
  tcp->program_path = context.program_path;
  char cwd[4096] = {0};
  tcp->cwd = getcwd(cwd, sizeof cwd - 1) ? cwd : ".";
  tcp->master_port = free_port();
  tcp->job_id = "chorusrun-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
  tcp->user_set_glibc_tunables = context.user_set_glibc_tunables;
  std::string error;
  tcp->secret = make_job_secret(&error);
  return error;
}

// Elastic mode: workers come and go (elastic_driver.h).
int launch_elastic(const LaunchOptions& options, const LaunchContext& context) {
  TcpLaunchContext tcp;
  if (std::string error = tcp_context(context, &tcp); !error.empty()) return fail(error);
  if (context.program_path.empty()) {
    return fail("program '" + options.command.front() + "' was not found (not an executable file, nor on the PATH)");
  }
  if (options.dry_run) {
    std::cout << "elastic job: workers start as hosts are found; each runs " << quote_command(options.command)
              << std::endl;
    return 0;
  }
  return run_elastic_job(options, tcp);
}

// --tcp: one process per rank, no mpirun; the job's code is the first
// failing rank's (by the code it chose when the exit hook saw it).
int launch_tcp(const LaunchOptions& options, const LaunchContext& context) {
  TcpLaunchContext tcp;
  std::string error = tcp_context(context, &tcp);
  if (!error.empty()) return fail(error);
  if (options.rank_exit_report) {
    tcp.exit_hook_path = find_exit_hook(this_executable());
    tcp.exit_record_dir = options.dry_run ? exit_record_dir_pattern() : make_exit_record_dir(&error);
    if (!error.empty()) return fail(error);
  }
  std::vector<RankCommand> ranks;
  error = make_tcp_launch(options, tcp, &ranks);
  if (error.empty() && options.output_dir && !options.dry_run) {
    error = make_rank_output_dirs(*options.output_dir, options.num_proc);
  }
  int code = 2;
  if (!error.empty()) {
    fail(error);
  } else {
    if (options.verbose || options.dry_run) print_rank_commands(ranks);
    code = 0;
    if (!options.dry_run) {
      const RankGroupOutcome outcome = run_rank_group(ranks, options.output_dir.value_or(""));
      std::string report;
      code = rank_group_exit_code(outcome, tcp.exit_record_dir.empty() ? std::vector<RankExit>{}
                                                                       : read_rank_exits(tcp.exit_record_dir),
                                  &report);
      if (!report.empty()) std::cerr << "chorusrun: " << report << "; exit code " << code << "\n";
    }
  }
  if (!options.dry_run && !tcp.exit_record_dir.empty()) remove_exit_record_dir(tcp.exit_record_dir);
  return code;
}

// Runs the plan and returns the job's exit code.
int launch(const LaunchOptions& options, LaunchContext context) {
  std::string error;
  // The ranks inherit it from mpirun's environment (-x by name): no command line shows it.
  const std::string secret = make_job_secret(&error);
  if (!error.empty()) return fail(error);
  setenv(kSecretVariable, secret.c_str(), 1);
  context.pass_secret = true;
  if (options.rank_exit_report) {
    context.self_path = this_executable();
    context.exit_hook_path = find_exit_hook(context.self_path);
    // A dry run shows the folder's pattern and makes none.
    context.exit_record_dir = options.dry_run ? exit_record_dir_pattern() : make_exit_record_dir(&error);
    if (!error.empty()) return fail(error);
  }
  LaunchPlan plan;
  error = make_launch_plan(options, context, &plan);
  int code = 2;
  if (!error.empty()) {
    fail(error);
  } else {
    if (options.verbose || options.dry_run) std::cout << quote_command(plan.argv) << std::endl;
    code = 0;
    if (!options.dry_run) {
      std::string run_error;
      int received_signal = 0;
      const int mpirun_code = run_and_wait(plan.argv, &run_error, &received_signal);
      code = job_exit_code(plan, mpirun_code, received_signal);
      if (!run_error.empty()) std::cerr << "chorusrun: error: " << run_error << "\n";
    }
  }
  if (!options.dry_run && !context.exit_record_dir.empty()) remove_exit_record_dir(context.exit_record_dir);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == kRankExitReporterFlag) {
    return run_rank_exit_reporter(std::vector<std::string>(argv + 2, argv + argc));
  }
  const ParseResult parsed = parse_command_line(std::vector<std::string>(argv, argv + argc));
  if (!parsed.help_text.empty()) {
    std::cout << parsed.help_text;
    return 0;
  }
  if (!parsed.error.empty()) return fail(parsed.error + " (see chorusrun --help)");
  const LaunchOptions& options = parsed.options;
  if (options.check_build) {
    std::cout << check_build_report();
    return 0;
  }

  LaunchContext context;
  context.is_root = geteuid() == 0;
  context.local_host_names = local_host_names();
  context.mpirun_path = resolve_executable("mpirun");
  context.program_path = resolve_executable(options.command.front());
  context.user_set_glibc_tunables = std::getenv("GLIBC_TUNABLES") != nullptr;
  context.local_cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  if (options.elastic) return launch_elastic(options, context);
  if (options.tcp) return launch_tcp(options, context);
  return launch(options, context);
}
