#include "comm/mpi/mpi_environment.h"

#include <mpi.h>

#include <cstdlib>
#include <string>

namespace chorus::detail {

namespace {

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

Status ensure_mpi_initialized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return Status::precondition_error("MPI was already finalized in this process; Chorus cannot start");
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    // SERIALIZED is enough for the global set's one background thread;
    // MULTIPLE lets process sets run on threads of their own.
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      return Status::unknown_error("MPI_Init_thread failed");
    }
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    return Status::precondition_error(
        std::string("MPI provides only ") + thread_level_name(provided) +
        "; Chorus makes its MPI calls from a background thread and needs MPI_THREAD_SERIALIZED "
        "(initialize MPI with MPI_Init_thread(..., MPI_THREAD_SERIALIZED or MULTIPLE, ...))");
  }
  return Status::ok();
}

}  // namespace chorus::detail
