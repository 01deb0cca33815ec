// libchorusrun_exit_hook.so: preloaded into each rank of a local job by its
// reporter (rank_exit_reporter.cc). It writes the exit code the program
// chose, with the time, the moment main returns or exit() is called: before
// any exit hook runs (Chorus's shutdown tells the other ranks this one is
// leaving, and MPI_Finalize waits for them), so the rank that failed first
// is recorded first even when its process ends last.
//
// Only the process the reporter started records (CHORUSRUN_EXIT_PID), not
// programs it runs in turn. The file is written once, with plain system calls.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

using MainFn = int (*)(int, char**, char**);
using StartMainFn = int (*)(MainFn, int, char**, void (*)(), void (*)(), void (*)(), void*);

// The program's main, handed over by __libc_start_main (one per process:
// the preloaded library's only state).
MainFn g_program_main = nullptr;
bool g_recorded = false;

bool is_reported_process() {
  const char* pid = std::getenv("CHORUSRUN_EXIT_PID");
  return pid != nullptr && std::atol(pid) == static_cast<long>(getpid());
}

void record_exit(int status) {
  if (g_recorded || !is_reported_process()) return;
  g_recorded = true;
  const char* path = std::getenv("CHORUSRUN_EXIT_RECORD");
  if (path == nullptr) return;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  char line[64];
  const int n = std::snprintf(line, sizeof(line), "exit %d %lld\n", status & 0xff,
                              static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)!write(fd, line, static_cast<size_t>(n));
  close(fd);
}

int main_then_record(int argc, char** argv, char** envp) {
  const int status = g_program_main(argc, argv, envp);
  record_exit(status);
  return status;
}

}  // namespace

extern "C" {

// The dynamic loader resolves _start's call to this here first (LD_PRELOAD):
// run the real one with main wrapped.
int __libc_start_main(MainFn main, int argc, char** argv, void (*init)(), void (*fini)(), void (*rtld_fini)(),
                      void* stack_end) {
  const auto next = reinterpret_cast<StartMainFn>(dlsym(RTLD_NEXT, "__libc_start_main"));
  g_program_main = main;
  return next(main_then_record, argc, argv, init, fini, rtld_fini, stack_end);
}

// exit() called by the program itself (not when main returns: glibc calls
// its own exit directly then, and main_then_record has recorded already).
[[noreturn]] void exit(int status) noexcept {
  record_exit(status);
  const auto next = reinterpret_cast<void (*)(int)>(dlsym(RTLD_NEXT, "exit"));
  next(status);
  _exit(status);  // not reached
}

}  // extern "C"
