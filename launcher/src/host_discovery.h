#pragma once
// Elastic training's host discovery (horovodrun --host-discovery-script):
// a program the user provides that prints the hosts available now, one
// `host` or `host:slots` a line. chorusrun runs it every
// --discovery-interval seconds. Running it is a thin layer over fork/exec
// (no shell); reading its output is a pure function, unit-tested apart.

#include <functional>
#include <string>
#include <vector>

#include "host_list.h"

namespace chorus::launcher {

/// What one run of the discovery script found.
struct DiscoveryResult {
  std::vector<HostSlots> hosts;       ///< in the order printed; may be empty (none available yet)
  std::vector<std::string> warnings;  ///< to log; the hosts are still usable
  std::string error;                  ///< non-empty: the run failed, `hosts` is empty
};

/// Reads the script's output: one `host` or `host:slots` a line (`host`
/// alone has `default_slots`, --slots-per-host), surrounding white space and
/// blank lines ignored. Host names follow -H's rules (is_valid_host_name);
/// the first line that is not `host[:slots]` is an error naming its number
/// and text. No hosts at all is not an error (the driver waits for some). A
/// host printed on several lines is one host with their slots added up (as
/// -H a:2,a:2), at its first line's place, with a warning naming the lines.
DiscoveryResult parse_discovery_output(const std::string& text, int default_slots);

/// Runs the script at `path` (directly, no shell; stdin /dev/null, in a
/// process group of its own) and parses its stdout. Errors, each naming the
/// script: it is missing or not an executable file, cannot be started, exits
/// with a code other than 0 or is killed by a signal (with the last lines of
/// its stderr), prints a malformed line, or runs longer than
/// `timeout_seconds` (its process group is then killed with SIGKILL). While
/// it runs, `stop` (if given) is asked every 50 ms at most; once it says
/// true the script is killed too, and the error says it was stopped (for a
/// driver that received SIGINT or SIGTERM meanwhile).
DiscoveryResult run_discovery_script(const std::string& path, int default_slots, double timeout_seconds,
                                     const std::function<bool()>& stop = nullptr);

}  // namespace chorus::launcher
