#pragma once
// `chorusrun --rank-exit-reporter DIR HOOK PROGRAM [ARGS...]`: what mpirun
// starts on each rank of a local job. Runs PROGRAM (with HOOK, the exit
// hook library, preloaded unless HOOK is "-"), waits for it, records how it
// ended in DIR (rank_exits.h), and ends the same way: the same exit code,
// or the same signal. Signals mpirun sends reach PROGRAM directly (it shares
// this process's process group); this process only outlives it.

#include <string>
#include <vector>

namespace chorus::launcher {

/// The hidden first argument that selects this mode.
extern const char* const kRankExitReporterFlag;

/// `args`: DIR HOOK PROGRAM [ARGS...]. Returns the exit code to use, after
/// re-raising PROGRAM's fatal signal on itself when it died of one.
int run_rank_exit_reporter(const std::vector<std::string>& args);

/// In a rank's process between fork and exec: the exit hook records into
/// `exit_record` for this pid, with `hook` preloaded (none when "-").
void prepare_exit_hook_environment(const std::string& exit_record, const std::string& hook);

}  // namespace chorus::launcher
