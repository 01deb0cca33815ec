// The error when settings that must agree across ranks differ: which ones,
// and each rank's value.
#include <catch2/catch.hpp>

#include "chorus/version.h"
#include "comm/agreed_settings.h"
#include "comm/build_check.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
std::vector<int64_t> values_of(const RuntimeOptions& o, bool thread_multiple = true) {
  std::vector<int64_t> out;
  for (const AgreedSetting& s : agreed_settings(o, thread_multiple)) out.push_back(s.value);
  return out;
}
}  // namespace

TEST_CASE("Agreeing ranks give no error", "[settings]") {
  RuntimeOptions o;
  REQUIRE(check_agreement(agreed_settings(o, true), {values_of(o)}).is_ok());
  REQUIRE(check_agreement(agreed_settings(o, true), {values_of(o), values_of(o), values_of(o)}).is_ok());
}

TEST_CASE("A differing setting is named with its value on every rank", "[settings]") {
  RuntimeOptions a, b;
  b.cache_capacity = 16;
  const Status s = check_agreement(agreed_settings(a, true), {values_of(a), values_of(b), values_of(a)});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  const std::string& m = s.message();
  REQUIRE_THAT(m, Catch::Contains("rank(s) 1 differ from rank 0") &&
                      Catch::Contains("CHORUS_CACHE_CAPACITY is 1024 on ranks 0, 2 and 16 on rank 1"));
  REQUIRE_THAT(m, !Catch::Contains("CHORUS_RING_SEGMENT_BYTES"));  // only what differs
}

TEST_CASE("Several differing settings, three values, enums and the thread level read as the user wrote them",
          "[settings]") {
  RuntimeOptions a, b, c;
  b.allreduce_algorithm = AllreduceAlgorithm::kRing;
  c.allreduce_algorithm = AllreduceAlgorithm::kSharedMemory;
  c.ring_segment_bytes = 4096;
  const std::string m = check_agreement(agreed_settings(a, true),
                                        {values_of(a), values_of(b), values_of(c), values_of(a, false)})
                            .message();
  REQUIRE_THAT(m, Catch::Contains("rank(s) 1, 2, 3 differ from rank 0"));
  REQUIRE_THAT(m, Catch::Contains("CHORUS_ALLREDUCE_ALGO is auto on ranks 0, 3, ring on rank 1 and shm on rank 2"));
  REQUIRE_THAT(m, Catch::Contains("CHORUS_RING_SEGMENT_BYTES is 1048576 on ranks 0, 1, 3 and 4096 on rank 2"));
  REQUIRE_THAT(m, Catch::Contains("the MPI thread level is MPI_THREAD_MULTIPLE on ranks 0, 1, 2 and below "
                                  "MPI_THREAD_MULTIPLE on rank 3"));
}

TEST_CASE("Ranks of different builds are named with each build's version and wire format", "[settings]") {
  const BuildIdentity mine = this_build();
  REQUIRE(check_builds({mine}).is_ok());
  REQUIRE(check_builds({mine, mine, mine}).is_ok());
  BuildIdentity newer = mine, older = mine;
  newer.wire_format = mine.wire_format + 1;
  newer.version = mine.version + 1000;  // the next minor version
  older.marker = 0;                     // a build from before the identity row
  const Status s = check_builds({mine, newer, mine, older});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  const std::string version = std::to_string(CHORUS_VERSION_MAJOR) + "." + std::to_string(CHORUS_VERSION_MINOR) + "." +
                              std::to_string(CHORUS_VERSION_PATCH);
  const std::string next = std::to_string(CHORUS_VERSION_MAJOR) + "." + std::to_string(CHORUS_VERSION_MINOR + 1) + "." +
                           std::to_string(CHORUS_VERSION_PATCH);
  REQUIRE_THAT(s.message(), Catch::Contains("different Chorus builds") &&
                                Catch::Contains("Chorus " + version + " (wire format " +
                                                std::to_string(kWireFormatVersion) + ") on ranks 0, 2") &&
                                Catch::Contains("Chorus " + next + " (wire format " +
                                                std::to_string(kWireFormatVersion + 1) + ") on rank 1") &&
                                Catch::Contains("no Chorus build identity") && Catch::Contains("on rank 3"));
}
