#include "rank_group_runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "child_process.h"

namespace chorus::launcher {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kOutputDrain = std::chrono::seconds(2);  // after the last rank ended

std::string rank_output_dir(const std::string& dir, int rank) { return dir + "/1/rank." + std::to_string(rank); }

int open_log(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::fprintf(stderr, "chorusrun: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  return fd;
}

std::vector<Child*> pointers(std::vector<Child>& children) {
  std::vector<Child*> out;
  for (Child& c : children) out.push_back(&c);
  return out;
}

void signal_all(std::vector<Child>& children, int sig) {
  for (const Child& c : children) signal_child(c, sig);
}

// Starts every rank; how many run. A rank that cannot be started stops
// the starting (the job cannot run without it) and is named in `*outcome`.
int start_all(const std::vector<RankCommand>& ranks, const std::string& output_dir, std::vector<Child>& children,
              RankGroupOutcome* outcome) {
  int running = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    Child& c = children[i];
    c.rank = ranks[i].rank;
    c.exited = true;  // until it runs
    c.out.terminal = stdout;
    c.err.terminal = stderr;
    if (outcome->unstarted_rank >= 0) continue;
    if (!start_child(ranks[i], &c)) {
      outcome->unstarted_rank = c.rank;
      outcome->start_error = std::strerror(errno);
      continue;
    }
    c.exited = false;
    ++running;
    if (!output_dir.empty()) {
      c.out.log = open_log(rank_output_dir(output_dir, c.rank) + "/stdout");
      c.err.log = open_log(rank_output_dir(output_dir, c.rank) + "/stderr");
    }
  }
  return running;
}

// Notes the ranks that ended; how many. They stay unreaped until the job is
// over: no new process can take the pid of one, so signalling its group
// never reaches a stranger.
int note_exits(std::vector<Child>& children, std::vector<RankExit>* exits) {
  int ended = 0;
  for (Child& c : children) {
    RankExit e;
    if (!note_exit(c, &e)) continue;
    ++ended;
    exits->push_back(e);
  }
  return ended;
}

void reap_all(const std::vector<Child>& children) {
  for (const Child& c : children) {
    if (c.pid > 0) waitpid(c.pid, nullptr, 0);  // NOLINT: sys/wait.h via child_process
  }
}

}  // namespace

RankGroupOutcome run_rank_group(const std::vector<RankCommand>& ranks, const std::string& output_dir) {
  forward_signals();
  std::vector<Child> children(ranks.size());
  RankGroupOutcome outcome;
  // After the first failure the others get a moment to end on their own
  // (over TCP they notice at once and say which rank they lost), then
  // SIGTERM, then SIGKILL; a rank that could not start ends them now.
  const auto end_the_others = [](Clock::duration grace, Clock::time_point* term_at, Clock::time_point* kill_at) {
    *term_at = Clock::now() + grace;
    *kill_at = *term_at + std::chrono::seconds(5);
  };
  Clock::time_point term_at = Clock::time_point::max(), kill_at = term_at;
  int running = start_all(ranks, output_dir, children, &outcome);
  bool failed = outcome.unstarted_rank >= 0;
  if (failed) end_the_others(Clock::duration::zero(), &term_at, &kill_at);
  // A rank's output can outlive it (a process it started keeps the pipe):
  // once every rank ended, what is still open gets a bounded drain.
  Clock::time_point drain_until = Clock::time_point::max();
  for (int open = 1; running > 0 || open > 0;) {
    open = relay_ready(pointers(children));
    if (running == 0 && open > 0) {
      if (drain_until == Clock::time_point::max()) drain_until = Clock::now() + kOutputDrain;
      if (Clock::now() >= drain_until) {
        for (Child& c : children) close_child_streams(c, true);  // a last line without its newline still shows
        std::fprintf(stderr, "chorusrun: every rank ended, but a process one of them started still holds its output "
                             "open; not waiting for it\n");
        break;
      }
    }
    if (const int sig = take_received_signal(); sig != 0) {  // the user's interrupt: every rank gets it
      outcome.received_signal = sig;
      signal_all(children, sig);
    }
    running -= note_exits(children, &outcome.exits);
    if (!failed && std::any_of(outcome.exits.begin(), outcome.exits.end(), [](const RankExit& e) { return e.failed(); })) {
      failed = true;
      end_the_others(std::chrono::seconds(3), &term_at, &kill_at);
    }
    if (Clock::now() >= term_at) {
      signal_all(children, SIGTERM);
      term_at = Clock::time_point::max();
    }
    if (Clock::now() >= kill_at) {
      signal_all(children, SIGKILL);
      kill_at = Clock::time_point::max();
    }
  }
  // A failed job leaves nothing behind: what the ranks started goes too,
  // though every rank ended before its SIGTERM was due.
  if (failed && term_at != Clock::time_point::max()) signal_all(children, SIGTERM);
  reap_all(children);
  for (Child& c : children) close_child_streams(c, false);
  return outcome;
}

std::string make_rank_output_dirs(const std::string& output_dir, int ranks) {
  std::vector<std::string> dirs = {output_dir, output_dir + "/1"};
  for (int r = 0; r < ranks; ++r) dirs.push_back(rank_output_dir(output_dir, r));
  for (const std::string& d : dirs) {
    struct stat st {};
    if (mkdir(d.c_str(), 0755) != 0 && !(errno == EEXIST && stat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      return "--output-filename: cannot make the folder '" + d + "': " +
             (errno == EEXIST ? std::string("a file is in the way") : std::string(std::strerror(errno)));
    }
  }
  return "";
}

int rank_group_exit_code(const RankGroupOutcome& outcome, const std::vector<RankExit>& exit_calls,
                         std::string* report) {
  report->clear();
  if (outcome.unstarted_rank >= 0) {
    *report = "rank " + std::to_string(outcome.unstarted_rank) + " could not be started (" + outcome.start_error +
              "), so the job was ended";
    return kCannotStartExitCode;
  }
  if (outcome.received_signal != 0) {
    const char* name = strsignal(outcome.received_signal);
    *report = "the job was stopped by signal " + std::to_string(outcome.received_signal) +
              (name ? std::string(" (") + name + ")" : std::string()) + ", passed on to every rank";
    return 128 + outcome.received_signal;
  }
  std::vector<RankExit> records = outcome.exits;
  records.insert(records.end(), exit_calls.begin(), exit_calls.end());
  int code = 0;
  *report = first_failure_line(records, &code);
  return code;
}

}  // namespace chorus::launcher
