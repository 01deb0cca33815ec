#pragma once
// Reading the knobs of the registry (common/knob_registry.h) from the
// environment: each from CHORUS_<NAME>, or HOROVOD_<NAME> when the CHORUS_
// one is unset, so Horovod users' habits carry over. Values are parsed once,
// when a Runtime starts, into its RuntimeOptions (the typed cache); a bad
// value is an error naming the variable.

#include <optional>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"
#include "common/knob_registry.h"

namespace chorus::detail {

/// Value of CHORUS_<name>, else HOROVOD_<name>; the variable actually used
/// goes to `*source` when given.
std::optional<std::string> read_env(const std::string& name, std::string* source = nullptr);

/// A number knob read where it is used (no RuntimeOptions field): its value,
/// checked by its registry row, or `fallback` when unset; a bad value is an
/// error naming the variable.
Status number_from_environment(const char* name, double fallback, double* out);

/// CHORUS_* variables set in this process that no knob reads (a typo, or a
/// knob this build does not have). CHORUS_BUILD_* and CHORUS_TEST_* are
/// left out: they belong to the project's scripts and tests.
std::vector<std::string> unknown_chorus_variables();

/// Horovod's variables set in this process that Chorus has no counterpart
/// for (HOROVOD_HIERARCHICAL_ALLGATHER, ...): Horovod habits that would be
/// silently ignored otherwise.
std::vector<std::string> unread_horovod_variables();

/// Options built in code (init(options)) held to the ranges the environment
/// is: an error naming the knob's variable and the range, or ok.
Status check_options(const RuntimeOptions& options);

/// Options from the environment over the defaults (stall times settled).
Status options_from_environment(RuntimeOptions* options);

/// A stall shutdown after S seconds with no check, or a later one, gets a
/// check every S seconds: the shutdown needs the check that notices the stall.
void settle_stall_times(RuntimeOptions* options);

}  // namespace chorus::detail
