#pragma once
// chorusrun's tuning flags, made from the core's knob registry
// (core/src/common/knob_registry.h): one flag per knob, named after it
// (CACHE_CAPACITY: --cache-capacity) unless the registry gives Horovod's
// spelling (--cycle-time-ms), checked by the core's own rules, so a value
// chorusrun passes is one init() takes. No second list of names or ranges.

#include <string>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include "common/knob_registry.h"

namespace chorus::launcher {

/// The flag that sets `knob`.
std::string tuning_flag(const detail::Knob& knob);

/// Adds every knob's flag to `options`, with a help line saying the variable
/// it sets and what it accepts.
void add_tuning_flags(boost::program_options::options_description* options);

/// The knobs the flags in `vm` set, as (CHORUS_* variable, value) in the
/// registry's order, each checked as the core will; "" or an error naming
/// the flag, its value and what it accepts.
std::string tuning_knobs(const boost::program_options::variables_map& vm,
                         std::vector<std::pair<std::string, std::string>>* knobs);

}  // namespace chorus::launcher
