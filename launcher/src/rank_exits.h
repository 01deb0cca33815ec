#pragma once
// Which rank failed first, from the records each rank leaves in the job's
// exit-record folder (local jobs only; see docs/launcher.md):
//   rank.R.exit  written inside the rank when main returns or exit() is
//                called (exit_hook.cc): the code the program chose, and when
//   rank.R.wait  written by the rank's reporter process once the rank is
//                gone (rank_exit_reporter.cc): its exit code or signal
// The first is what orders an error exit: a rank that exits with an error
// still runs its exit hooks (Chorus shuts down, MPI finalizes), and the
// other ranks, told that it is leaving, may be gone before it is.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace chorus::launcher {

struct RankExit {
  enum class Source { kExitCall, kWait };
  int rank = -1;
  Source source = Source::kWait;
  bool signaled = false;  ///< killed by signal `value` rather than exiting with code `value`
  int value = 0;
  int64_t time_ns = 0;    ///< CLOCK_REALTIME

  bool failed() const { return signaled || value != 0; }
  /// What a shell would report: the code, or 128 + the signal.
  int exit_code() const { return signaled ? 128 + value : value; }
};

/// The record file's one line, and back. parse_rank_exit returns nullopt
/// for anything malformed.
std::string format_rank_exit(const RankExit& e);
std::optional<RankExit> parse_rank_exit(const std::string& line, int rank, RankExit::Source source);

/// The name of a record file inside the job folder.
std::string rank_exit_file(int rank, RankExit::Source source);

/// Every well-formed record in `dir`.
std::vector<RankExit> read_rank_exits(const std::string& dir);

/// The rank that failed first: per rank, the code it chose itself when that
/// was an error (an exit call), else how its process ended; the earliest of
/// those failures (the lower rank on a tie). nullopt when no rank failed.
std::optional<RankExit> first_failure(const std::vector<RankExit>& records);

/// "rank 2 exited with code 5", "rank 1 was killed by signal 9 (Killed)".
std::string describe(const RankExit& e);

/// "rank 2 exited with code 5, the first rank to fail (3 ranks failed in
/// all)" with `*exit_code` set to its code; "" when no rank failed.
std::string first_failure_line(const std::vector<RankExit>& records, int* exit_code);

}  // namespace chorus::launcher
