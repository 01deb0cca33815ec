#pragma once
// Runs the ranks of a chorusrun --tcp job as child processes (execvp: no
// shell here; a remote rank's agent gets one quoted command): their stdout
// and stderr line by line, prefixed with the rank, to chorusrun's (and, with
// --output-filename, unprefixed to one file each per rank); SIGINT and
// SIGTERM passed on; when a rank fails, the others are ended (those still
// running 3 s later get SIGTERM, SIGKILL 5 s after that).

#include <string>
#include <vector>

#include "rank_exits.h"
#include "tcp_launch_plan.h"

namespace chorus::launcher {

/// How the ranks ended.
struct RankGroupOutcome {
  std::vector<RankExit> exits;  ///< each rank's process as it ended (Source::kWait), with when
  int unstarted_rank = -1;      ///< a rank that could not be started (the job was ended)
  std::string start_error;      ///< why
  int received_signal = 0;      ///< SIGINT or SIGTERM that chorusrun passed on to the ranks
};

/// Starts every rank and returns once all have ended. `output_dir` (when
/// not empty) gets mpirun's layout: DIR/1/rank.N/stdout and .../stderr.
RankGroupOutcome run_rank_group(const std::vector<RankCommand>& ranks, const std::string& output_dir);

/// The folders of `output_dir`'s layout for `ranks` ranks; an error line
/// naming the one that cannot be made, else "".
std::string make_rank_output_dirs(const std::string& output_dir, int ranks);

/// The job's exit code, with the line that says why in `*report` ("" when
/// every rank exited 0): a rank that could not be started (127); a signal
/// passed on to the ranks (128 + N, no rank named: they ended because they
/// were told to); else the rank that failed first by `exit_calls` (what the
/// exit hook recorded, rank_exits.h) and the processes' ends.
int rank_group_exit_code(const RankGroupOutcome& outcome, const std::vector<RankExit>& exit_calls,
                         std::string* report);

}  // namespace chorus::launcher
