// chorusrun: a horovodrun-style launcher over Open MPI.
//   chorusrun -np 4 ./train
//   chorusrun -np 8 -H a:4,b:4 ./train --epochs 3
// Parses options, looks at this machine, builds the mpirun argument vector
// (launch_plan.cc) and runs it. See docs/launcher.md.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "check_build.h"
#include "launch_options.h"
#include "launch_plan.h"
#include "process_runner.h"

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

int fail(const std::string& message) {
  std::cerr << "chorusrun: error: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
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
  LaunchPlan plan;
  const std::string error = make_launch_plan(options, context, &plan);
  if (!error.empty()) return fail(error);

  if (options.verbose || options.dry_run) std::cout << quote_command(plan.argv) << std::endl;
  if (options.dry_run) return 0;
  std::string run_error;
  const int code = run_and_wait(plan.argv, &run_error);
  if (!run_error.empty()) std::cerr << "chorusrun: error: " << run_error << "\n";
  return code;
}
