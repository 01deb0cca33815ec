#pragma once
// Runs the mpirun argument vector as a child process (execv: no shell, so
// nothing in a host name or program argument is ever interpreted), forwards
// SIGINT and SIGTERM to it, and returns the job's exit code.

#include <string>
#include <vector>

namespace chorus::launcher {

/// Exit code of the child; 128 + N when it died of signal N; 127 when it
/// could not be started (with `*error` set).
int run_and_wait(const std::vector<std::string>& argv, std::string* error);

}  // namespace chorus::launcher
