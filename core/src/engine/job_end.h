#pragma once
// What a rank does once its background loop ended: close the control
// channel, waiting a bounded time for the other ranks, and end the whole job
// itself where it could not end otherwise. docs/troubleshooting.md lists
// the exit codes.

#include <chrono>
#include <string>

#include "comm/backend.h"
#include "common/logging.h"

namespace chorus::detail {

/// The job's exit code after a stall shutdown (CHORUS_STALL_SHUTDOWN_TIME_SECONDS).
constexpr int kStallShutdownExitCode = 75;
/// The job's exit code when some rank did not get to the close of a shutdown
/// in time (stopped, gone or stuck): MPI_Finalize would wait for it forever.
constexpr int kUnansweredShutdownExitCode = 76;
/// How long a rank waits for the others at the close. A live rank gets there
/// within milliseconds: it has run the same responses, up to the shutdown.
constexpr std::chrono::milliseconds kCloseBound{5000};

struct LoopEnd {
  std::string reason;  ///< why the loop ended, as pending operations were told
  bool stall = false;  ///< by a stall shutdown
};

/// Closes `backend`'s control channel within `bound`. A stall shutdown ends
/// the job after that (exit code kStallShutdownExitCode), even when every
/// rank answered: a rank that did not submit may be stuck where nothing else
/// would end it. Any other shutdown ends the job only when some rank did not
/// get to the close in time (kUnansweredShutdownExitCode). Every rank logs
/// why before it ends the job.
void close_or_end_job(Backend& backend, const Logger& logger, const LoopEnd& end,
                      std::chrono::milliseconds bound = kCloseBound);

}  // namespace chorus::detail
