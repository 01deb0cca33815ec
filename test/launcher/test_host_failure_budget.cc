// The per-host failure budget of chorusrun's elastic mode (host_failure_budget.h).
#include <catch2/catch.hpp>

#include "host_failure_budget.h"

using chorus::launcher::HostFailureBudget;

TEST_CASE("A host's failures within the window count against its budget", "[launcher][elastic]") {
  HostFailureBudget b(2, 60);
  REQUIRE(b.record("a", 0));         // 1 of 2: replaced
  REQUIRE(b.record("a", 10));        // 2 of 2: replaced
  REQUIRE_FALSE(b.record("a", 20));  // 3 within 60 s: over, blacklist
  REQUIRE(b.failures("a", 20) == 3);
  REQUIRE(b.record("b", 20));  // another host has its own budget
}

TEST_CASE("Failures older than the window are forgotten", "[launcher][elastic]") {
  HostFailureBudget b(1, 60);
  REQUIRE(b.record("a", 0));
  REQUIRE(b.failures("a", 59.9) == 1);
  REQUIRE(b.failures("a", 60) == 0);
  REQUIRE(b.record("a", 61));  // the first one is out of the window
  REQUIRE_FALSE(b.record("a", 62));
}

TEST_CASE("A budget of 0 blacklists at the first failure, as Horovod", "[launcher][elastic]") {
  HostFailureBudget b(0, 60);
  REQUIRE_FALSE(b.record("a", 0));
}
