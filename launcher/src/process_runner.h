#pragma once
// Runs the mpirun argument vector as a child process (execv: no shell, so
// nothing in a host name or program argument is ever interpreted), forwards
// SIGINT and SIGTERM to it, and returns the job's exit code.

#include <string>
#include <vector>

namespace chorus::launcher {

/// Exit code of the child; 128 + N when it died of signal N; 127 when it
/// could not be started (with `*error` set). `*received_signal` (when
/// given): the last SIGINT or SIGTERM this process received while the child
/// ran (passed on, or from the terminal, which reached the child too), 0 if none.
int run_and_wait(const std::vector<std::string>& argv, std::string* error, int* received_signal = nullptr);

}  // namespace chorus::launcher
