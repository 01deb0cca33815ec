// Choosing the rank that failed first from the ranks' exit records.
#include <catch2/catch.hpp>

#include "rank_exits.h"

using namespace chorus::launcher;

namespace {

RankExit record(int rank, RankExit::Source source, bool signaled, int value, int64_t time_ns) {
  RankExit e;
  e.rank = rank;
  e.source = source;
  e.signaled = signaled;
  e.value = value;
  e.time_ns = time_ns;
  return e;
}

constexpr auto kExit = RankExit::Source::kExitCall;
constexpr auto kWait = RankExit::Source::kWait;

}  // namespace

TEST_CASE("Exit records round-trip; malformed ones are refused", "[launcher][exits]") {
  const RankExit e = record(2, kWait, true, 9, 1234567890123);
  const auto back = parse_rank_exit(format_rank_exit(e), 2, kWait);
  REQUIRE(back);
  REQUIRE((back->signaled && back->value == 9 && back->time_ns == 1234567890123 && back->rank == 2));
  REQUIRE(back->exit_code() == 137);
  REQUIRE(parse_rank_exit("exit 5 10", 0, kExit)->exit_code() == 5);
  for (const char* bad : {"", "exit", "exit 5", "quit 5 10", "exit 256 10", "exit -1 10", "signal 0 10",
                          "exit 5 10 extra", "exit five 10"}) {
    INFO(bad);
    REQUIRE_FALSE(parse_rank_exit(bad, 0, kExit));
  }
  REQUIRE(rank_exit_file(3, kExit) == "rank.3.exit");
  REQUIRE(rank_exit_file(3, kWait) == "rank.3.wait");
}

TEST_CASE("The first failure is the earliest error a rank chose, not the first process to end",
          "[launcher][exits]") {
  // Rank 0 chose exit code 3 at t=100, then sat in its exit hooks while
  // ranks 1 and 2, told it was leaving, failed (t=150) and ended first; the
  // job then killed rank 0 (t=300).
  const std::vector<RankExit> records = {
      record(0, kExit, false, 3, 100), record(1, kExit, false, 1, 150), record(2, kExit, false, 1, 151),
      record(1, kWait, false, 1, 160), record(2, kWait, false, 1, 161), record(0, kWait, true, 15, 300)};
  const auto first = first_failure(records);
  REQUIRE(first);
  REQUIRE(first->rank == 0);
  REQUIRE(first->exit_code() == 3);
  REQUIRE(describe(*first) == "rank 0 exited with code 3");
}

TEST_CASE("A rank killed by a signal counts from when its process ended", "[launcher][exits]") {
  // Rank 1 was killed (no exit call); rank 0 failed after noticing.
  const std::vector<RankExit> records = {record(1, kWait, true, 9, 100), record(0, kExit, false, 1, 120),
                                         record(0, kWait, false, 1, 130)};
  const auto first = first_failure(records);
  REQUIRE((first && first->rank == 1 && first->exit_code() == 137));
  REQUIRE_THAT(describe(*first), Catch::StartsWith("rank 1 was killed by signal 9"));
}

TEST_CASE("A rank that chose success but was killed later is a failure from then on", "[launcher][exits]") {
  const std::vector<RankExit> records = {record(0, kExit, false, 0, 100), record(0, kWait, true, 15, 400),
                                         record(1, kWait, false, 2, 200)};
  const auto first = first_failure(records);
  REQUIRE((first && first->rank == 1 && first->exit_code() == 2));
}

TEST_CASE("No failure, or a tie", "[launcher][exits]") {
  REQUIRE_FALSE(first_failure({}));
  REQUIRE_FALSE(first_failure({record(0, kExit, false, 0, 1), record(0, kWait, false, 0, 2)}));
  const auto tie = first_failure({record(2, kExit, false, 4, 7), record(1, kExit, false, 6, 7)});
  REQUIRE((tie && tie->rank == 1));
}
