#include "process_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chorus::launcher {

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_received = 0;

// Only signals someone sent with kill() are passed on: a Ctrl-C from the
// terminal already reached mpirun (same process group), and a second SIGINT
// within seconds makes mpirun abandon its orderly teardown.
void forward(int sig, siginfo_t* info, void*) {
  g_received = sig;
  if (g_child > 0 && info != nullptr && info->si_code == SI_USER) kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

int run_and_wait(const std::vector<std::string>& argv, std::string* error, int* received_signal) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Forwarders installed, and both signals blocked across the fork until the
  // child's pid is known, so none falls in between.
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigset_t both, previous;
  sigemptyset(&both);
  sigaddset(&both, SIGINT);
  sigaddset(&both, SIGTERM);
  sigprocmask(SIG_BLOCK, &both, &previous);

  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    *error = std::string("fork failed: ") + std::strerror(errno);
    return 127;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    execv(args[0], args.data());
    const std::string msg = std::string("chorusrun: cannot start ") + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  g_child = pid;
  g_received = 0;
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  int status = 0;
  int rc;
  while ((rc = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  sigprocmask(SIG_BLOCK, &both, nullptr);  // no forwarding to a reaped (reusable) pid
  g_child = 0;
  if (received_signal != nullptr) *received_signal = g_received;
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (rc < 0) {
    *error = std::string("waitpid failed: ") + std::strerror(errno);
    return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace chorus::launcher
