#pragma once
// Runs the ranks of a chorusrun --tcp job as child processes (execvp: no
// shell here; a remote rank's agent gets one quoted command): their output
// line by line, prefixed with the rank; SIGINT and SIGTERM passed on; when a
// rank fails, the others are ended (those still running 3 s later get
// SIGTERM, SIGKILL 5 s after that) and the job exits with the first failing
// rank's code.

#include <string>
#include <vector>

#include "tcp_launch_plan.h"

namespace chorus::launcher {

/// 0 when every rank exited 0; else the first failing rank's exit code
/// (128 + N for a rank killed by signal N). `*report` says which rank failed first.
int run_rank_group(const std::vector<RankCommand>& ranks, std::string* report);

}  // namespace chorus::launcher
