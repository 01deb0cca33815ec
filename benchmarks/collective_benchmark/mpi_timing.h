#pragma once
// The host sections' MPI helpers.
#include <mpi.h>

namespace bench {

/// Median over ranks' per-iteration times would hide a slow rank: every
/// iteration counts the slowest rank's time, as the job waits for it.
inline double slowest_rank(double seconds) {
  double out = 0;
  MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

}  // namespace bench
