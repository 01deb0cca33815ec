#pragma once
/// \file guarded_main.h
/// The main() of every LibTorch example: parse the flags (exit 2 on bad
/// ones, 0 after --help), run, and turn an exception into one clear line and
/// exit 1, shutting Chorus down so the other ranks' pending collectives fail
/// instead of waiting for this one.

#include <cstdio>
#include <exception>
#include <optional>

#include <chorus/chorus.h>

#include "error_message.h"

namespace chorus_examples {

/// `parse(argc, argv)` returns the options, or nullopt after --help;
/// `run(options, &rank)` sets rank once known, for the error line.
template <typename Parse, typename Run>
int guarded_main(const char* program, int argc, char** argv, Parse parse, Run run) {
  decltype(parse(argc, argv)) options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 2;
  }
  if (!options) return 0;  // --help
  int rank = -1;
  try {
    return run(*options, &rank);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error (rank %d): %s\n", program, rank, error_message(e).c_str());
    chorus::shutdown();
    return 1;
  }
}

}  // namespace chorus_examples
