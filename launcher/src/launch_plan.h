#pragma once
// From what the user asked (LaunchOptions) and what this machine is
// (LaunchContext) to exactly what runs: the mpirun argument vector. Pure
// functions, so every rule is unit-tested without launching anything.

#include <string>
#include <vector>

#include "launch_options.h"

namespace chorus::launcher {

/// Facts about this machine and environment that shape the command.
struct LaunchContext {
  bool is_root = false;
  std::vector<std::string> local_host_names;  ///< hostname, short name, ...
  std::string mpirun_path;                    ///< resolved mpirun
  std::string program_path;                   ///< resolved PROGRAM ("" if it was not found)
  bool user_set_glibc_tunables = false;       ///< GLIBC_TUNABLES already in the environment
  int local_cores = 1;                        ///< online cores of this machine
  std::string self_path;                      ///< this chorusrun ("": ranks are not wrapped)
  std::string exit_hook_path;                 ///< libchorusrun_exit_hook.so ("": none found)
  std::string exit_record_dir;                ///< where ranks record how they ended ("": nowhere)
  bool pass_secret = false;                   ///< CHORUS_SECRET is in chorusrun's environment: -x it by name
};

struct LaunchPlan {
  std::vector<HostSlots> hosts;
  bool all_local = true;
  bool oversubscribe = false;
  /// Variables set on every rank (NAME, VALUE).
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> argv;  ///< argv[0] is mpirun
  /// Where the ranks record how they ended (each runs under chorusrun's
  /// rank exit reporter); "" when they do not (a job on other hosts too).
  std::string exit_record_dir;
};

/// The malloc settings chorusrun gives ranks unless told otherwise: large
/// activation buffers are reused instead of unmapped and touched afresh
/// every step (see docs/launcher.md).
extern const char* const kTunedGlibcTunables;

/// Builds the plan, or returns an error line (more ranks than the slots of a
/// remote host list, ...).
std::string make_launch_plan(const LaunchOptions& options, const LaunchContext& context, LaunchPlan* plan);

/// The argv as one line a person can paste into a shell (quoted).
std::string quote_command(const std::vector<std::string>& argv);

}  // namespace chorus::launcher
