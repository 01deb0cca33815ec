// What chorusrun's integration tests launch: each rank prints its place in
// the job, the knobs its runtime received and a variable passed with -x,
// checks one allreduce across all ranks, and exits with the code given by
// --exit-code on the last rank (to test exit-code propagation), or sleeps
// with --sleep (to test signal forwarding). With --fail-rank R, rank R
// returns --exit-code from main without shutting down (an error exit) while
// the others wait in an allreduce it never joins, and fail once it is gone.
#include <chorus/chorus.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include <unistd.h>

int main(int argc, char** argv) {
  int exit_code = 0;
  int fail_rank = -1;
  double sleep_seconds = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--exit-code")) exit_code = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--fail-rank")) fail_rank = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--sleep")) sleep_seconds = std::atof(argv[i + 1]);
  }
  chorus::init();
  const int rank = chorus::rank(), size = chorus::size();
  int64_t v = rank + 1;
  auto t = std::make_shared<chorus::HostTensorView>(&v, chorus::DataType::kInt64, chorus::TensorShape{1});
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  chorus::allreduce_async("report", t, t, sum).wait();
  const chorus::RuntimeOptions& o = chorus::runtime().options();
  const char* probe = std::getenv("CHORUS_TEST_PROBE");
  char netns[128] = {0};  // which network namespace ("host") this rank runs in
  if (readlink("/proc/self/ns/net", netns, sizeof(netns) - 1) < 0) std::strcpy(netns, "unknown");
  std::printf("REPORT rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d "
              "sum=%lld fusion=%lld cycle_ms=%g stall_s=%g probe=%s netns=%s pid=%d\n",
              rank, size, chorus::local_rank(), chorus::local_size(), chorus::cross_rank(),
              chorus::cross_size(), (long long)v, (long long)o.fusion_threshold_bytes, o.cycle_time_ms,
              o.stall_check_seconds, probe ? probe : "(unset)", netns, static_cast<int>(getpid()));
  std::fflush(stdout);
  if (fail_rank >= 0) {
    if (rank == fail_rank) return exit_code;  // the atexit hooks stop the runtime
    try {
      chorus::allreduce_async("never_completes", t, t, sum).wait();
    } catch (const std::exception& e) {  // fail_rank is gone
      std::fprintf(stderr, "rank_report: rank %d: %s\n", rank, e.what());
      return 1;
    }
    return 0;
  }
  if (sleep_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_seconds));
  chorus::shutdown();
  return rank == size - 1 ? exit_code : 0;
}
