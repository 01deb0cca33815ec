#include "rank_exit_reporter.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "rank_exits.h"

namespace chorus::launcher {

const char* const kRankExitReporterFlag = "--rank-exit-reporter";

namespace {

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

void write_record(const std::string& path, const RankExit& e) {
  const std::string line = format_rank_exit(e) + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;  // a missing record only means chorusrun falls back to mpirun's code
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

// Signals the job gets reach the program through the process group; this
// process must not end before the program does, so it only notes them.
void ignore_while_waiting(int) {}

}  // namespace

void prepare_exit_hook_environment(const std::string& exit_record, const std::string& hook) {
  setenv("CHORUSRUN_EXIT_RECORD", exit_record.c_str(), 1);
  setenv("CHORUSRUN_EXIT_PID", std::to_string(getpid()).c_str(), 1);
  if (hook == "-") return;
  const char* preload = std::getenv("LD_PRELOAD");
  const std::string value = preload && *preload ? hook + ":" + preload : hook;
  setenv("LD_PRELOAD", value.c_str(), 1);
  // AddressSanitizer refuses to run unless its runtime is the first library
  // loaded; the hook intercepts no memory function, so that check may go.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string options = asan ? asan : "";
  if (options.find("verify_asan_link_order") == std::string::npos) {
    setenv("ASAN_OPTIONS", (options.empty() ? "" : options + ":").append("verify_asan_link_order=0").c_str(), 1);
  }
}

int run_rank_exit_reporter(const std::vector<std::string>& args) {
  if (args.size() < 3) {
    std::fprintf(stderr, "chorusrun: %s needs DIR HOOK PROGRAM [ARGS...]\n", kRankExitReporterFlag);
    return 2;
  }
  const std::string& dir = args[0];
  const char* rank_text = std::getenv("OMPI_COMM_WORLD_RANK");
  const int rank = rank_text ? std::atoi(rank_text) : -1;
  const std::string record = dir + "/" + rank_exit_file(rank, RankExit::Source::kExitCall);

  struct sigaction sa {};
  sa.sa_handler = ignore_while_waiting;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "chorusrun: cannot fork for %s: %s\n", args[2].c_str(), std::strerror(errno));
    return 127;
  }
  if (pid == 0) {  // handlers revert to the default at exec
    if (rank >= 0) prepare_exit_hook_environment(record, args[1]);
    std::vector<char*> argv;
    for (size_t i = 2; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "chorusrun: cannot start %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  RankExit e;
  e.rank = rank;
  e.signaled = WIFSIGNALED(status);
  e.value = e.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
  e.time_ns = now_ns();
  if (rank >= 0) write_record(dir + "/" + rank_exit_file(rank, RankExit::Source::kWait), e);
  if (!e.signaled) return e.value;
  // End the way the program did, so mpirun reports the signal (without a
  // second core dump: the program's is the one that matters).
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(e.value, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, e.value);
  sigprocmask(SIG_UNBLOCK, &one, nullptr);
  raise(e.value);
  return e.exit_code();
}

}  // namespace chorus::launcher
