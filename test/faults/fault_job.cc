// A small training-like job for the fault tests (test/faults/run_faults.sh):
// every rank allreduces two tensors per step, with a pause between steps
// that stands for compute. One rank can be made to fail at a given step,
// by the signal a user or the system would send it:
//
//   chorus_fault_job STEPS [stop|kill RANK STEP]
//
// stop: RANK sends itself SIGSTOP before enqueueing step STEP (as `kill -STOP`
//       would, but at a known point: between collectives);
// kill: RANK sends itself SIGKILL there.
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

struct Fault {
  int signal = 0;  // 0: none
  int rank = -1;
  int step = -1;
};

bool parse(int argc, char** argv, int* steps, Fault* fault) {
  if (argc != 2 && argc != 5) return false;
  *steps = std::atoi(argv[1]);
  if (argc == 2) return *steps > 0;
  if (std::strcmp(argv[2], "stop") == 0) {
    fault->signal = SIGSTOP;
  } else if (std::strcmp(argv[2], "kill") == 0) {
    fault->signal = SIGKILL;
  } else {
    return false;
  }
  fault->rank = std::atoi(argv[3]);
  fault->step = std::atoi(argv[4]);
  return *steps > 0 && fault->step >= 0;
}

void one_step(int step) {
  std::vector<float> a(1024, 1.0f), b(8, 2.0f);
  auto ta = std::make_shared<chorus::HostTensorView>(a.data(), chorus::DataType::kFloat32, chorus::TensorShape{1024});
  auto tb = std::make_shared<chorus::HostTensorView>(b.data(), chorus::DataType::kFloat32, chorus::TensorShape{8});
  // The same names every step: after the first, they travel as cache bits.
  chorus::Handle ha = chorus::allreduce_async("grad.a", ta, ta);
  chorus::Handle hb = chorus::allreduce_async("grad.b", tb, tb);
  ha.wait();
  hb.wait();
  if (a[0] != 1.0f || b[7] != 2.0f) {
    std::fprintf(stderr, "fault_job: wrong result at step %d\n", step);
    std::exit(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 0;
  Fault fault;
  if (!parse(argc, argv, &steps, &fault)) {
    std::fprintf(stderr, "usage: chorus_fault_job STEPS [stop|kill RANK STEP]\n");
    return 2;
  }
  chorus::init();
  const int rank = chorus::rank();
  // The Open MPI job id names the job's shared-memory files (/dev/shm).
  const char* job = std::getenv("OMPI_MCA_ess_base_jobid");
  std::printf("fault_job: rank %d pid %d job %s\n", rank, static_cast<int>(getpid()), job ? job : "-");
  std::fflush(stdout);
  try {
    for (int step = 0; step < steps; ++step) {
      if (rank == fault.rank && step == fault.step) {
        std::printf("fault_job: rank %d sends itself signal %d at step %d\n", rank, fault.signal, step);
        std::fflush(stdout);
        kill(getpid(), fault.signal);
      }
      one_step(step);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
