// Catch2 under mpirun or a TCP rendezvous: every rank runs the same test
// cases in the same order (they are collective), between chorus::init()
// and shutdown().
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "chorus/chorus.h"

namespace {

// The job is the one the launcher started: a rank that came up alone (a
// job of one, say, when no transport found the others) would pass every
// test by itself and prove nothing.
bool job_matches_launcher(const char* rank_name, const char* size_name) {
  const char* rank = std::getenv(rank_name);
  const char* size = std::getenv(size_name);
  if (rank == nullptr || size == nullptr) return true;
  if (chorus::rank() == std::atoi(rank) && chorus::size() == std::atoi(size)) return true;
  std::fprintf(stderr, "the launcher said rank %s of %s (%s, %s), but Chorus is rank %d of %d\n", rank, size,
               rank_name, size_name, chorus::rank(), chorus::size());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::init();
  if (!job_matches_launcher("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE") ||
      !job_matches_launcher("RANK", "WORLD_SIZE")) {
    chorus::shutdown();
    return 3;
  }
  const int result = Catch::Session().run(argc, argv);
  chorus::shutdown();
  return result;
}
