#include "comm/agreed_settings.h"

#include <utility>

#include "common/rank_text.h"

namespace chorus::detail {

namespace {

// A value as the user wrote it.
std::string as_written(const AgreedSetting& setting, int64_t v) {
  if (setting.knob != nullptr) return knob_value_text(*setting.knob, v);
  return v != 0 ? "MPI_THREAD_MULTIPLE" : "below MPI_THREAD_MULTIPLE";  // the thread level
}

// "8 on rank 0 and 16 on ranks 1, 2": each value with the ranks that hold it,
// in order of the lowest rank.
std::string values_per_rank(const AgreedSetting& setting, const std::vector<std::vector<int64_t>>& values, size_t i) {
  std::vector<std::pair<int64_t, std::vector<int>>> groups;
  for (size_t r = 0; r < values.size(); ++r) {
    const int64_t v = values[r][i];
    auto it = groups.begin();
    while (it != groups.end() && it->first != v) ++it;
    if (it == groups.end()) it = groups.insert(groups.end(), {v, {}});
    it->second.push_back(static_cast<int>(r));
  }
  std::string out;
  for (size_t g = 0; g < groups.size(); ++g) {
    out += g == 0 ? "" : (g + 1 == groups.size() ? " and " : ", ");
    out += as_written(setting, groups[g].first) + " on " + rank_list(groups[g].second);
  }
  return out;
}

}  // namespace

std::vector<AgreedSetting> agreed_settings(const RuntimeOptions& o, bool thread_multiple) {
  std::vector<AgreedSetting> out;
  for (const Knob& k : knobs()) {
    if (k.scope == KnobScope::kJobWide) out.push_back({k.variable(), k.value(o), &k});
  }
  out.push_back({"the MPI thread level", thread_multiple ? 1 : 0, nullptr});
  return out;
}

Status check_agreement(const std::vector<AgreedSetting>& mine, const std::vector<std::vector<int64_t>>& values) {
  std::vector<int> differing;
  for (size_t r = 1; r < values.size(); ++r) {
    if (values[r] != values[0]) differing.push_back(static_cast<int>(r));
  }
  if (differing.empty()) return Status::ok();
  std::string details;
  for (size_t i = 0; i < mine.size(); ++i) {
    bool same = true;
    for (const auto& rank_values : values) same = same && rank_values[i] == values[0][i];
    if (same) continue;
    details += (details.empty() ? "" : "; ") + mine[i].name + " is " + values_per_rank(mine[i], values, i);
  }
  return Status::invalid_argument("Settings that decide what travels between ranks must be the same on every rank, "
                                  "but rank(s) " + ranks_text(differing) + " differ from rank 0: " + details +
                                  " (chorusrun's flags set them on every rank)");
}

}  // namespace chorus::detail
