#include "rank_group_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "rank_exit_reporter.h"

namespace chorus::launcher {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kCannotStartExitCode = 127;  // as a shell's "command not found"
constexpr auto kOutputDrain = std::chrono::seconds(2);  // after the last rank ended
volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }
// What chorusrun passes on to every rank: the terminal's signals reach the
// ranks only through it (each rank has a session of its own).
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

sigset_t forwarded_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwarded) sigaddset(&set, sig);
  return set;
}

// Forwards them all, but a SIGHUP chorusrun was told to ignore (nohup): the
// ranks ignore it too. (A shell's background job ignores SIGINT and SIGQUIT;
// sent to chorusrun on purpose, they still end the job, as under mpirun.)
void forward_signals() {
  for (int sig : kForwarded) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (sig == SIGHUP && old.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigaction(sig, &action, nullptr);
  }
}

// One of a rank's output pipes: where its lines go.
struct Stream {
  int fd = -1;           // the pipe's read end (-1: closed)
  std::string partial;   // the line not ended yet
  int log = -1;          // --output-filename's file (-1: none)
  FILE* terminal = nullptr;
};

struct Child {
  int rank = 0;
  pid_t pid = -1;
  Stream out, err;
  bool exited = false;
};

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

void close_pair(int fds[2]) {
  const int saved = errno;
  close(fds[0]);
  close(fds[1]);
  errno = saved;
}

// In the forked child: a session of its own (so that ending the rank ends
// what it started: a wrapper script's program, a remote rank's agent; as
// torchrun and Horovod's launcher do), its pipes as stdout and stderr, its
// variables, the exit hook; then the program.
[[noreturn]] void exec_rank(const RankCommand& c, int in, int out, int err, pid_t parent) {
  setsid();
  // chorusrun's handlers are not the rank's; a signal sent since the fork
  // (blocked until here) now ends it. Should chorusrun itself die, so do the ranks.
  for (int sig : kForwarded) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_IGN) signal(sig, SIG_DFL);
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(kCannotStartExitCode);  // it died before the line above
  const sigset_t forwarded = forwarded_set();
  sigprocmask(SIG_UNBLOCK, &forwarded, nullptr);
  if (in >= 0) dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  if (c.local) {
    for (const auto& [name, value] : c.env) setenv(name.c_str(), value.c_str(), 1);
  }
  if (!c.exit_record.empty()) prepare_exit_hook_environment(c.exit_record, c.exit_hook);
  std::vector<char*> argv;
  for (const std::string& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "chorusrun: cannot start %s: %s\n", argv[0], std::strerror(errno));
  _exit(kCannotStartExitCode);
}

// A rank's stdin with `text` (a remote rank's secret) and then its end;
// -1 for none (the rank keeps chorusrun's stdin); false when pipe2 fails.
bool stdin_with(const std::string& text, int* read_end) {
  *read_end = -1;
  if (text.empty()) return true;
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return false;
  // A few bytes: the pipe's buffer takes them at once.
  const bool written = write(in[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(in[1]);
  if (!written) {
    close(in[0]);
    errno = EIO;
    return false;
  }
  *read_end = in[0];
  return true;
}

// Starts one rank with its output into two pipes; false (and errno) when
// pipe2 or fork fails.
bool start(const RankCommand& c, Child* child) {
  int in = -1, out[2], err[2];
  if (!stdin_with(c.stdin_text, &in)) return false;
  if (pipe2(out, O_CLOEXEC) != 0) {
    if (in >= 0) close(in);
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    close_pair(out);
    if (in >= 0) close(in);
    return false;
  }
  // Signals wait until the child has its own session and handlers.
  const sigset_t forwarded = forwarded_set();
  sigset_t before;
  sigprocmask(SIG_BLOCK, &forwarded, &before);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_rank(c, in, out[1], err[1], parent);
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  if (in >= 0) close(in);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    errno = fork_errno;
    return false;
  }
  child->pid = pid;
  child->out.fd = out[0];
  child->err.fd = err[0];
  return true;
}

std::string rank_output_dir(const std::string& dir, int rank) { return dir + "/1/rank." + std::to_string(rank); }

int open_log(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::fprintf(stderr, "chorusrun: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  return fd;
}

// Everything that arrived goes to the log as it is; every whole line to the
// terminal, prefixed with the rank.
void relay(Stream& s, int rank) {
  char buffer[65536];
  const ssize_t n = read(s.fd, buffer, sizeof buffer);
  if (n > 0) {
    if (s.log >= 0) (void)!write(s.log, buffer, static_cast<size_t>(n));
    s.partial.append(buffer, static_cast<size_t>(n));
  }
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::fprintf(s.terminal, "[%d] %.*s\n", rank, static_cast<int>(nl - start), s.partial.data() + start);
  }
  s.partial.erase(0, start);
  if (n <= 0 && !(n < 0 && errno == EINTR)) {  // the rank closed it
    if (!s.partial.empty()) std::fprintf(s.terminal, "[%d] %s\n", rank, s.partial.c_str());
    close(s.fd);
    s.fd = -1;
  }
  std::fflush(s.terminal);
}

// Waits up to 100 ms for output and relays what came; how many pipes are open.
int relay_ready(std::vector<Child>& children) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Stream*, int>> owners;
  for (Child& c : children) {
    for (Stream* s : {&c.out, &c.err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.emplace_back(s, c.rank);
    }
  }
  if (poll(fds.data(), fds.size(), 100) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) relay(*owners[i].first, owners[i].second);
    }
  }
  return static_cast<int>(fds.size());
}

// To each rank's process group: the rank and what it started, even when
// the rank itself already ended (a wrapper's program may live on).
void signal_all(std::vector<Child>& children, int sig) {
  for (const Child& c : children) {
    if (c.pid <= 0) continue;
    // ESRCH: no group yet (the child is not past its setsid) or no longer.
    if (kill(-c.pid, sig) != 0 && errno == ESRCH && !c.exited) kill(c.pid, sig);
  }
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
    if (!start(ranks[i], &c)) {
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
    if (c.exited || c.pid <= 0) continue;
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != c.pid) {
      continue;
    }
    c.exited = true;
    ++ended;
    RankExit e;
    e.rank = c.rank;
    e.signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
    e.value = info.si_status;  // the exit code, or the signal
    e.time_ns = now_ns();
    exits->push_back(e);
  }
  return ended;
}

void reap_all(const std::vector<Child>& children) {
  for (const Child& c : children) {
    if (c.pid > 0) waitpid(c.pid, nullptr, 0);
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
    open = relay_ready(children);
    if (running == 0 && open > 0) {
      if (drain_until == Clock::time_point::max()) drain_until = Clock::now() + kOutputDrain;
      if (Clock::now() >= drain_until) {
        for (Child& c : children) {  // a last line without its newline still shows
          for (Stream* st : {&c.out, &c.err}) {
            if (st->fd >= 0 && !st->partial.empty()) std::fprintf(st->terminal, "[%d] %s\n", c.rank, st->partial.c_str());
          }
        }
        std::fprintf(stderr, "chorusrun: every rank ended, but a process one of them started still holds its output "
                             "open; not waiting for it\n");
        break;
      }
    }
    if (g_signal != 0) {  // the user's interrupt: every rank gets it
      outcome.received_signal = g_signal;
      signal_all(children, g_signal);
      g_signal = 0;
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
  for (Child& c : children) {
    for (Stream* st : {&c.out, &c.err}) {
      if (st->fd >= 0) close(st->fd);
      if (st->log >= 0) close(st->log);
    }
  }
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
