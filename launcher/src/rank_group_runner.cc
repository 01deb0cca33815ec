#include "rank_group_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace chorus::launcher {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kCannotStartExitCode = 127;  // as a shell's "command not found"
volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int out = -1;         // its stdout and stderr
  std::string partial;  // the line not ended yet
  bool exited = false;
};

// Starts one rank with its output into a pipe; -1 (and errno) when pipe2 or fork fails.
pid_t start(const RankCommand& c, int* read_end) {
  *read_end = -1;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (c.local) {
      for (const auto& [name, value] : c.env) setenv(name.c_str(), value.c_str(), 1);
    }
    std::vector<char*> argv;
    for (const std::string& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "chorusrun: cannot start %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  const int fork_errno = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    errno = fork_errno;
    return -1;
  }
  *read_end = fds[0];
  return pid;
}

// Prints every whole line that arrived, prefixed with the rank.
void relay(Child& c) {
  char buffer[65536];
  const ssize_t n = read(c.out, buffer, sizeof buffer);
  if (n > 0) c.partial.append(buffer, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = c.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::printf("[%d] %.*s\n", c.rank, static_cast<int>(nl - start), c.partial.data() + start);
  }
  c.partial.erase(0, start);
  if (n <= 0 && !(n < 0 && errno == EINTR)) {  // the rank closed its output
    if (!c.partial.empty()) std::printf("[%d] %s\n", c.rank, c.partial.c_str());
    close(c.out);
    c.out = -1;
  }
  std::fflush(stdout);
}

void signal_all(std::vector<Child>& children, int sig) {
  for (const Child& c : children) {
    if (!c.exited) kill(c.pid, sig);
  }
}

// Starts every rank; how many run. A rank that cannot be started stops
// the starting (the job cannot run without it): `*failed` names it, `*why` says why.
int start_all(const std::vector<RankCommand>& ranks, std::vector<Child>& children, int* failed, std::string* why) {
  int running = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    children[i].rank = ranks[i].rank;
    children[i].exited = true;  // until it runs
    if (*failed >= 0) continue;
    children[i].pid = start(ranks[i], &children[i].out);
    if (children[i].pid > 0) {
      children[i].exited = false;
      ++running;
    } else {
      *failed = ranks[i].rank;
      *why = std::strerror(errno);
    }
  }
  return running;
}

}  // namespace

int run_rank_group(const std::vector<RankCommand>& ranks, std::string* report) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::vector<Child> children(ranks.size());
  int first_code = 0, first_rank = -1;
  std::string start_error;
  // After the first failure the others get a moment to end on their own
  // (over TCP they notice at once and say which rank they lost), then
  // SIGTERM, then SIGKILL.
  Clock::time_point term_at = Clock::time_point::max(), kill_at = term_at;
  int running = start_all(ranks, children, &first_rank, &start_error);
  if (first_rank >= 0) {  // the ranks that run would wait for it until their timeout: end them now
    first_code = kCannotStartExitCode;
    term_at = Clock::now();
    kill_at = term_at + std::chrono::seconds(5);
  }
  for (int open = running; running > 0 || open > 0;) {
    std::vector<pollfd> fds;
    std::vector<Child*> owners;
    for (Child& c : children) {
      if (c.out >= 0) {
        fds.push_back({c.out, POLLIN, 0});
        owners.push_back(&c);
      }
    }
    if (poll(fds.data(), fds.size(), 100) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) relay(*owners[i]);
      }
    }
    open = static_cast<int>(fds.size());
    if (g_signal != 0) {  // the user's interrupt: every rank gets it
      signal_all(children, g_signal);
      g_signal = 0;
    }
    int status = 0;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
      for (Child& c : children) {
        if (c.pid != pid) continue;
        c.exited = true;
        --running;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && first_rank < 0) {  // the first to fail: end the others
          first_rank = c.rank;
          first_code = code;
          term_at = Clock::now() + std::chrono::seconds(3);
          kill_at = term_at + std::chrono::seconds(5);
        }
      }
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
  if (!start_error.empty()) {
    *report = "rank " + std::to_string(first_rank) + " could not be started (" + start_error +
              "), so the job was ended";
  } else if (first_rank >= 0) {
    *report = "rank " + std::to_string(first_rank) + " exited with code " + std::to_string(first_code) +
              ", the first rank to fail";
  }
  return first_code;
}

}  // namespace chorus::launcher
