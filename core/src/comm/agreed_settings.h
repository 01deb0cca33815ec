#pragma once
// The settings every rank of a job must share: the knobs the registry marks
// job-wide (common/knob_registry.h: algorithm, thresholds, segment sizes,
// cache slots; they decide what travels between ranks), and the MPI thread
// level that process sets need. And the error that names which of them
// differ and each rank's value. Pure: a backend gathers every rank's values
// and calls check_agreement; unit-tested directly.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"
#include "common/knob_registry.h"

namespace chorus::detail {

struct AgreedSetting {
  std::string name;  ///< as the user sets it, e.g. "CHORUS_CACHE_CAPACITY"
  int64_t value;
  const Knob* knob;  ///< the registry's row, or nullptr for the MPI thread level
};

/// This rank's values, in the same order on every rank (the registry's).
std::vector<AgreedSetting> agreed_settings(const RuntimeOptions& options, bool thread_multiple);

/// OK when every rank has the same values; otherwise an invalid argument
/// naming each setting that differs and its value on every rank.
/// `values[r][i]`: rank r's value of `mine[i]` (`mine`: any rank's
/// settings, for names and formats).
Status check_agreement(const std::vector<AgreedSetting>& mine, const std::vector<std::vector<int64_t>>& values);

}  // namespace chorus::detail
