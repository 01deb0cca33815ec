#pragma once
// Child processes of chorusrun --tcp: started in a session of their own with
// their output through pipes, relayed line by line with a label ("[3] ..."),
// signalled as a group, their ends noted without reaping. Used by the fixed
// group of ranks (rank_group_runner.h) and the elastic driver's changing
// set of workers (elastic_driver.h).

#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

#include "rank_exits.h"
#include "tcp_launch_plan.h"

namespace chorus::launcher {

constexpr int kCannotStartExitCode = 127;  // as a shell's "command not found"

/// The signal chorusrun received and passes on (0: none since the last take).
int take_received_signal();
/// Catches SIGINT, SIGTERM, SIGHUP, SIGQUIT to pass them on.
void forward_signals();

// One of a child's output pipes: where its lines go.
struct Stream {
  int fd = -1;          // the pipe's read end (-1: closed)
  std::string partial;  // the line not ended yet
  int log = -1;         // --output-filename's file (-1: none)
  FILE* terminal = nullptr;
};

struct Child {
  int rank = 0;  // its label in the output
  pid_t pid = -1;
  Stream out, err;
  bool exited = false;
};

/// Starts `c` with its output into two pipes; false (and errno) when pipe2
/// or fork fails.
bool start_child(const RankCommand& c, Child* child);
/// Waits up to `wait_ms` for output of `children` and relays what came; how
/// many pipes are open.
int relay_ready(const std::vector<Child*>& children, int wait_ms = 100);
/// Relays what is left of a child's unended lines and closes its pipes and logs.
void close_child_streams(Child& c, bool flush_partial);
/// To the child's process group (and what it started), even after it ended.
void signal_child(const Child& c, int sig);
/// Whether `c` ended (noted in `*exit` with when); it stays unreaped, so no
/// new process takes its pid while its group may still be signalled.
bool note_exit(Child& c, RankExit* exit);
int64_t now_ns();

}  // namespace chorus::launcher
