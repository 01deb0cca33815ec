#pragma once
// What the user asked chorusrun for: the command line (and an optional
// config file in Boost.Program_options format; the command line wins),
// parsed into one struct. Pure: no environment, no files except the config
// file and hostfile named on the command line.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host_blacklist.h"
#include "host_list.h"

namespace chorus::launcher {

/// Elastic training: horovodrun's elastic flags. Workers come and go as hosts
/// do; the job runs over the TCP transport.
struct ElasticOptions {
  int min_np = 1;                                   ///< --min-np (default: -np)
  std::optional<int> max_np;                        ///< --max-np (default: no limit)
  std::string discovery_script;                     ///< --host-discovery-script ("": the fixed hosts of LaunchOptions)
  int slots_per_host = 1;                           ///< --slots-per-host: of a discovered host printed without a count
  double elastic_timeout_seconds = 600;             ///< --elastic-timeout
  std::optional<int> reset_limit;                   ///< --reset-limit (default: no limit)
  std::optional<CooldownRange> blacklist_cooldown;  ///< --blacklist-cooldown-range (default: out for good)
  double discovery_interval_seconds = 1;            ///< --discovery-interval
};

struct LaunchOptions {
  int num_proc = 0;                        ///< -np
  std::vector<HostSlots> hosts;            ///< -H or --hostfile; empty = localhost:np
  bool hosts_given = false;
  bool check_build = false;
  bool verbose = false;
  bool dry_run = false;
  /// CHORUS_* variables from the tuning flags (tuning_flags.h), in the registry's order.
  std::vector<std::pair<std::string, std::string>> knobs;
  /// -x VAR or -x VAR=VALUE, as given.
  std::vector<std::string> exported_env;
  std::vector<std::string> mpi_args;       ///< --mpi-args, split into words
  std::optional<std::string> output_dir;   ///< --output-filename
  std::optional<int> ssh_port;             ///< -p
  std::optional<std::string> ssh_identity; ///< -i
  std::optional<int> start_timeout_seconds;
  bool tune_malloc = true;                 ///< --no-malloc-tuning turns it off
  bool rank_exit_report = true;            ///< --no-exit-report turns it off
  bool tcp = false;                        ///< --tcp: no mpirun, the TCP transport
  std::string agent;                       ///< --agent: starts remote ranks with --tcp (default ssh)
  std::vector<std::string> command;        ///< PROGRAM [ARGS...]
  /// Set when --min-np, --max-np or --host-discovery-script is given (then
  /// tcp is true; num_proc is the ranks to start with, min_np..max_np).
  std::optional<ElasticOptions> elastic;
};

/// Result of parsing: options, or an error line, or "show this help text".
struct ParseResult {
  LaunchOptions options;
  std::string error;      ///< non-empty: print it, exit 2
  std::string help_text;  ///< non-empty: print it, exit 0
};

/// Parses argv (argv[0] is chorusrun). Everything from PROGRAM on (the first
/// word that is not an option or an option's value, or what follows "--")
/// goes to the program untouched.
ParseResult parse_command_line(const std::vector<std::string>& args);

}  // namespace chorus::launcher
