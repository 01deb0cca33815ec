#pragma once
/// \file last_flag_wins.h
/// Boost.Program_options rejects a flag given twice; for the examples the
/// last one wins instead, so a wrapper script's defaults
/// (scripts/run_main_job.sh) can be overridden by the user's own flags.
/// parse_flags() is the examples' whole parse: last flag wins, errors as
/// std::invalid_argument, --help printed.

#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace chorus_examples {

/// Drops every occurrence of an option but its last one.
inline void keep_last_occurrences(boost::program_options::parsed_options& parsed) {
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < parsed.options.size(); ++i) last[parsed.options[i].string_key] = i;
  std::vector<boost::program_options::option> kept;
  for (size_t i = 0; i < parsed.options.size(); ++i) {
    if (last[parsed.options[i].string_key] == i) kept.push_back(parsed.options[i]);
  }
  parsed.options = std::move(kept);
}

/// Parses argv into the variables `desc` is bound to. Returns false after
/// printing --help; throws std::invalid_argument on a bad flag.
inline bool parse_flags(const boost::program_options::options_description& desc, int argc, char** argv) {
  namespace po = boost::program_options;
  po::variables_map vm;
  try {
    auto parsed = po::command_line_parser(argc, argv).options(desc).run();
    keep_last_occurrences(parsed);
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see --help)");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return false;
  }
  return true;
}

}  // namespace chorus_examples
