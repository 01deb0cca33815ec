#include "comm/build_check.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "chorus/version.h"
#include "common/rank_text.h"

namespace chorus::detail {

namespace {

constexpr int64_t kMarker = 0x43686f7275730001;  // "Chorus", then the row's own layout, 1

std::string build_text(const BuildIdentity& b) {
  if (b.marker != kMarker) return "a build that sends no Chorus build identity (a Chorus older than 0.3.0?)";
  const std::string version = std::to_string(b.version / 1000000) + "." + std::to_string(b.version / 1000 % 1000) +
                              "." + std::to_string(b.version % 1000);
  return "Chorus " + version + " (wire format " + std::to_string(b.wire_format) + ")";
}

bool same(const BuildIdentity& a, const BuildIdentity& b) {
  return a.marker == b.marker && a.wire_format == b.wire_format && a.version == b.version;
}

}  // namespace

BuildIdentity this_build() {
  BuildIdentity b;
  b.marker = kMarker;
  b.wire_format = kWireFormatVersion;
  if (const char* claimed = std::getenv("CHORUS_TEST_WIRE_FORMAT")) b.wire_format = std::atoll(claimed);
  b.version = int64_t{CHORUS_VERSION_MAJOR} * 1000000 + CHORUS_VERSION_MINOR * 1000 + CHORUS_VERSION_PATCH;
  return b;
}

Status check_builds(const std::vector<BuildIdentity>& ranks) {
  std::vector<std::pair<BuildIdentity, std::vector<int>>> builds;  // in order of the lowest rank
  for (size_t r = 0; r < ranks.size(); ++r) {
    auto it = builds.begin();
    while (it != builds.end() && !same(it->first, ranks[r])) ++it;
    if (it == builds.end()) it = builds.insert(builds.end(), {ranks[r], {}});
    it->second.push_back(static_cast<int>(r));
  }
  if (builds.size() <= 1) return Status::ok();
  std::string text;
  for (size_t i = 0; i < builds.size(); ++i) {
    text += i == 0 ? "" : (i + 1 == builds.size() ? " and " : ", ");
    text += build_text(builds[i].first) + " on " + rank_list(builds[i].second);
  }
  return Status::invalid_argument("The ranks run different Chorus builds, whose messages to each other differ: " +
                                  text + "; run the same build on every rank");
}

Status check_builds_agree(Communicator& comm, int size) {
  const BuildIdentity mine = this_build();
  const int64_t row[3] = {mine.marker, mine.wire_format, mine.version};
  std::vector<int64_t> all(3 * static_cast<size_t>(size));
  Status s = comm.allgatherv(row, all.data(), std::vector<int64_t>(static_cast<size_t>(size), 3), sizeof(int64_t));
  if (!s.is_ok()) return s;
  std::vector<BuildIdentity> ranks(static_cast<size_t>(size));
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = {all[3 * r], all[3 * r + 1], all[3 * r + 2]};
  return check_builds(ranks);
}

}  // namespace chorus::detail
