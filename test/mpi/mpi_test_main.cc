// Catch2 under mpirun: every rank runs the same test cases in the same
// order (they are collective), between chorus::init() and shutdown().
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "chorus/chorus.h"

int main(int argc, char** argv) {
  chorus::init();
  const int result = Catch::Session().run(argc, argv);
  chorus::shutdown();
  return result;
}
