#include "check_build.h"

#include <sstream>

#include <chorus/chorus.h>

#include "build_config.h"

namespace chorus::launcher {

namespace {
const char* mark(bool on) { return on ? "[X]" : "[ ]"; }
}  // namespace

std::string check_build_report() {
  std::ostringstream out;
  out << "Chorus v" << chorus::version() << ":\n\n"
      << "Available Frameworks:\n"
      << "    " << mark(CHORUS_BUILT_WITH_TORCH) << " LibTorch\n\n"
      << "Available Controllers:\n"
      << "    " << mark(CHORUS_BUILT_WITH_MPI) << " MPI\n"
      << "    " << mark(true) << " TCP (no MPI: torchrun, Slurm or CHORUS_* variables)\n\n"
      << "Available Tensor Operations:\n"
      << "    " << mark(CHORUS_BUILT_WITH_SHM) << " Shared-memory allreduce (ranks on one host)\n"
      << "    " << mark(CHORUS_BUILT_WITH_RING) << " Ring-AllReduce over MPI or TCP point-to-point\n"
      << "    " << mark(CHORUS_BUILT_WITH_MPI) << " MPI collectives\n"
      << "    " << mark(CHORUS_BUILT_WITH_NCCL) << " NCCL (GPU collectives on CUDA tensors)\n";
  return out.str();
}

}  // namespace chorus::launcher
