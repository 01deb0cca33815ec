#include "comm/settings_check.h"

#include <string>
#include <vector>

#include "comm/agreed_settings.h"
#include "comm/build_check.h"

namespace chorus::detail {

Status check_settings_agree(Communicator& comm, int size, const RuntimeOptions& options, bool thread_multiple) {
  // Builds first, in rows every build sends alike: the settings' rows below
  // differ in length between builds that differ in their knobs.
  if (Status builds = check_builds_agree(comm, size); !builds.is_ok()) return builds;
  const std::vector<AgreedSetting> mine = agreed_settings(options, thread_multiple);
  std::vector<int64_t> flat(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) flat[i] = mine[i].value;
  std::vector<int64_t> gathered(mine.size() * static_cast<size_t>(size));
  const std::vector<int64_t> rows(static_cast<size_t>(size), static_cast<int64_t>(mine.size()));
  Status s = comm.allgatherv(flat.data(), gathered.data(), rows, sizeof(int64_t));
  if (!s.is_ok()) return s;
  std::vector<std::vector<int64_t>> values(static_cast<size_t>(size));
  for (size_t r = 0; r < values.size(); ++r) {
    values[r].assign(gathered.begin() + static_cast<std::ptrdiff_t>(r * mine.size()),
                     gathered.begin() + static_cast<std::ptrdiff_t>((r + 1) * mine.size()));
  }
  return check_agreement(mine, values);
}

}  // namespace chorus::detail
