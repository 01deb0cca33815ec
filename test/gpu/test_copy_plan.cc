// The fusion buffer layout and launch batching of the device packer (host only).
#include <catch2/catch.hpp>

#include <numeric>

#include "device/cuda/copy_plan.h"

using namespace chorus::detail::gpu;

TEST_CASE("Offsets are padded to 16 bytes per piece", "[host][plan]") {
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies({3, 4, 0, 1, 5}, 4, kMaxCopiesPerLaunch, &plan, &error));
  CHECK(plan.offsets == std::vector<int64_t>{0, 16, 32, 32, 48});
  CHECK(plan.buffer_bytes == 80);  // 12->16, 16, 0, 4->16, 20->32
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0] == LaunchPieces{0, 1, 3, 4});  // the empty piece is not copied
  CHECK(padded_bytes(0) == 0);
  CHECK(padded_bytes(1) == 16);
  CHECK(padded_bytes(16) == 16);
  CHECK(padded_bytes(17) == 32);
}

TEST_CASE("Every element size keeps offsets element-aligned", "[host][plan]") {
  for (int64_t esize : {1, 2, 4, 8}) {
    CopyPlan plan;
    std::string error;
    REQUIRE(plan_copies({7, 1, 9}, esize, 4, &plan, &error));
    for (int64_t off : plan.offsets) CHECK(off % kFusionAlignment == 0);
    CHECK(plan.buffer_bytes == padded_bytes(7 * esize) + padded_bytes(esize) + padded_bytes(9 * esize));
  }
}

TEST_CASE("More pieces than one launch takes split into full launches in order", "[host][plan]") {
  std::vector<int64_t> counts(2 * kMaxCopiesPerLaunch + 7, 3);
  counts[5] = 0;  // an empty piece does not use a launch slot
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies(counts, 2, kMaxCopiesPerLaunch, &plan, &error));
  REQUIRE(plan.launches.size() == 3);
  CHECK(plan.launches[0].size() == static_cast<size_t>(kMaxCopiesPerLaunch));
  CHECK(plan.launches[1].size() == static_cast<size_t>(kMaxCopiesPerLaunch));
  CHECK(plan.launches[2].size() == 6);
  std::vector<size_t> all;
  for (const LaunchPieces& l : plan.launches) all.insert(all.end(), l.begin(), l.end());
  std::vector<size_t> expected(counts.size());
  std::iota(expected.begin(), expected.end(), 0);
  expected.erase(expected.begin() + 5);
  CHECK(all == expected);
}

TEST_CASE("A smaller per-launch limit is honoured", "[host][plan]") {
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies({1, 1, 1, 1, 1}, 8, 2, &plan, &error));
  REQUIRE(plan.launches.size() == 3);
  CHECK(plan.launches[2] == LaunchPieces{4});
}

TEST_CASE("An empty batch plans nothing", "[host][plan]") {
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies({}, 4, kMaxCopiesPerLaunch, &plan, &error));
  CHECK(plan.buffer_bytes == 0);
  CHECK(plan.launches.empty());
  REQUIRE(plan_copies({0, 0}, 4, kMaxCopiesPerLaunch, &plan, &error));
  CHECK(plan.launches.empty());
}

TEST_CASE("Bad input is refused with a message naming it", "[host][plan]") {
  CopyPlan plan;
  std::string error;
  CHECK_FALSE(plan_copies({4, -1}, 4, kMaxCopiesPerLaunch, &plan, &error));
  CHECK(error == "piece 1 has an invalid element count -1");
  CHECK_FALSE(plan_copies({4}, 3, kMaxCopiesPerLaunch, &plan, &error));
  CHECK(error == "element size 3 does not divide the fusion alignment");
  CHECK_FALSE(plan_copies({4}, 4, kMaxCopiesPerLaunch + 1, &plan, &error));
  CHECK(error == "copies per launch 161 is outside 1..160");
  CHECK_FALSE(plan_copies({4}, 4, 0, &plan, &error));
  CHECK_FALSE(plan_copies({INT64_MAX / 4}, 8, kMaxCopiesPerLaunch, &plan, &error));
  CHECK(error.find("piece 0") != std::string::npos);
}
