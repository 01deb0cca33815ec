#include "process_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chorus::launcher {

namespace {

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

int run_and_wait(const std::vector<std::string>& argv, std::string* error) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Install the forwarders before the fork so no signal falls in between.
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork failed: ") + std::strerror(errno);
    return 127;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execv(args[0], args.data());
    const std::string msg = std::string("chorusrun: cannot start ") + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  g_child = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *error = std::string("waitpid failed: ") + std::strerror(errno);
      return 127;
    }
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace chorus::launcher
