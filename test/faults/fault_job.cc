// A small training-like job for the fault tests (test/faults/run_faults.sh):
// every rank allreduces two tensors per step ('grad.a' of FLOATS floats and
// 'grad.b' of 8), then pauses PAUSE_MS, which stands for compute. One rank
// can be made to fail at a given step, by the signal a user or the system
// would send it:
//
//   chorus_fault_job STEPS FLOATS PAUSE_MS [stop|kill|stop+shutdown RANK STEP]
//
// stop: RANK sends itself SIGSTOP before enqueueing step STEP (as `kill -STOP`
//       would, but at a known point: between collectives);
// kill: RANK sends itself SIGKILL there;
// stop+shutdown: as stop, and rank 0 calls chorus::shutdown() 0.5 s later
//       instead of enqueueing step STEP (RANK must not be 0).
// Each rank prints "fault_job: rank R pid P job J" first, so the driver can
// continue or kill what is left and look for leftovers of job J, and
// "fault_job: rank R: <error>" when a collective fails; it exits 1 then, 0
// after STEPS steps.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"

namespace {

struct Job {
  int steps = 0;
  int64_t floats = 0;
  int pause_ms = 0;
};

struct Fault {
  int signal = 0;  // 0: none
  int rank = -1;
  int step = -1;
  bool then_shutdown = false;  // rank 0 calls shutdown() at `step`
};

bool parse(int argc, char** argv, Job* job, Fault* fault) {
  if (argc != 4 && argc != 7) return false;
  job->steps = std::atoi(argv[1]);
  job->floats = std::atoll(argv[2]);
  job->pause_ms = std::atoi(argv[3]);
  const bool job_ok = job->steps > 0 && job->floats > 0 && job->pause_ms >= 0;
  if (argc == 4) return job_ok;
  if (std::strcmp(argv[4], "stop") == 0 || std::strcmp(argv[4], "stop+shutdown") == 0) {
    fault->signal = SIGSTOP;
    fault->then_shutdown = std::strcmp(argv[4], "stop+shutdown") == 0;
  } else if (std::strcmp(argv[4], "kill") == 0) {
    fault->signal = SIGKILL;
  } else {
    return false;
  }
  fault->rank = std::atoi(argv[5]);
  fault->step = std::atoi(argv[6]);
  return job_ok && fault->step >= 0 && !(fault->then_shutdown && fault->rank == 0);
}

// Averages of ones stay ones: the buffers are reused, so that with no pause
// a rank spends nearly all its time inside collectives.
void one_step(int step, std::vector<float>& a, std::vector<float>& b) {
  auto ta = std::make_shared<chorus::HostTensorView>(a.data(), chorus::DataType::kFloat32,
                                                     chorus::TensorShape{static_cast<int64_t>(a.size())});
  auto tb = std::make_shared<chorus::HostTensorView>(b.data(), chorus::DataType::kFloat32, chorus::TensorShape{8});
  // The same names every step: after the first, they travel as cache bits.
  chorus::Handle ha = chorus::allreduce_async("grad.a", ta, ta);
  chorus::Handle hb = chorus::allreduce_async("grad.b", tb, tb);
  ha.wait();
  hb.wait();
  if (a.back() != 1.0f || b[7] != 1.0f) {
    std::fprintf(stderr, "fault_job: wrong result at step %d\n", step);
    std::exit(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Job job;
  Fault fault;
  if (!parse(argc, argv, &job, &fault)) {
    std::fprintf(stderr, "usage: chorus_fault_job STEPS FLOATS PAUSE_MS [stop|kill RANK STEP]\n");
    return 2;
  }
  chorus::init();
  const int rank = chorus::rank();
  // The Open MPI job id names the job's shared-memory files (/dev/shm).
  const char* job_id = std::getenv("OMPI_MCA_ess_base_jobid");
  std::printf("fault_job: rank %d pid %d job %s\n", rank, static_cast<int>(getpid()), job_id ? job_id : "-");
  std::fflush(stdout);
  std::vector<float> a(static_cast<size_t>(job.floats), 1.0f), b(8, 1.0f);
  try {
    for (int step = 0; step < job.steps; ++step) {
      if (rank == fault.rank && step == fault.step) {
        std::printf("fault_job: rank %d sends itself signal %d at step %d\n", rank, fault.signal, step);
        std::fflush(stdout);
        kill(getpid(), fault.signal);
      }
      if (rank == 0 && fault.then_shutdown && step == fault.step) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        std::printf("fault_job: rank 0 calls shutdown() at step %d\n", step);
        std::fflush(stdout);
        chorus::shutdown();
        return 0;
      }
      one_step(step, a, b);
      std::this_thread::sleep_for(std::chrono::milliseconds(job.pause_ms));
    }
  } catch (const chorus::Error& e) {
    std::printf("fault_job: rank %d: %s\n", rank, e.what());
    std::fflush(stdout);
    return 1;
  }
  chorus::shutdown();
  std::printf("fault_job: rank %d done\n", rank);
  return 0;
}
