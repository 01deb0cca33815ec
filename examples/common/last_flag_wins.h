#pragma once
/// \file last_flag_wins.h
/// Boost.Program_options rejects a flag given twice; for the examples the
/// last one wins instead, so a wrapper script's defaults
/// (scripts/run_main_job.sh) can be overridden by the user's own flags.

#include <map>
#include <string>
#include <vector>

#include <boost/program_options/parsers.hpp>

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

}  // namespace chorus_examples
