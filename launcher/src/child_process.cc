#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "rank_exit_reporter.h"

namespace chorus::launcher {

namespace {

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

}  // namespace

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

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

namespace {

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

}  // namespace

bool start_child(const RankCommand& c, Child* child) {
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

namespace {

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

}  // namespace

int relay_ready(const std::vector<Child*>& children, int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Stream*, int>> owners;
  for (Child* c : children) {
    for (Stream* s : {&c->out, &c->err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.emplace_back(s, c->rank);
    }
  }
  if (poll(fds.data(), fds.size(), wait_ms) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) relay(*owners[i].first, owners[i].second);
    }
  }
  return static_cast<int>(fds.size());
}

// The child and what it started, even when the child itself already ended
// (a wrapper's program may live on).
void signal_child(const Child& c, int sig) {
  if (c.pid <= 0) return;
  // ESRCH: no group yet (the child is not past its setsid) or no longer.
  if (kill(-c.pid, sig) != 0 && errno == ESRCH && !c.exited) kill(c.pid, sig);
}

bool note_exit(Child& c, RankExit* e) {
  if (c.exited || c.pid <= 0) return false;
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != c.pid) {
    return false;
  }
  c.exited = true;
  e->rank = c.rank;
  e->signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  e->value = info.si_status;  // the exit code, or the signal
  e->time_ns = now_ns();
  return true;
}

void close_child_streams(Child& c, bool flush_partial) {
  for (Stream* st : {&c.out, &c.err}) {
    if (flush_partial && st->fd >= 0 && !st->partial.empty()) {
      std::fprintf(st->terminal, "[%d] %s\n", c.rank, st->partial.c_str());
    }
    if (st->fd >= 0) close(st->fd);
    if (st->log >= 0) close(st->log);
    st->fd = st->log = -1;
  }
}

int take_received_signal() {
  const int sig = g_signal;
  g_signal = 0;
  return sig;
}

}  // namespace chorus::launcher
