// Elastic training's blacklist: who is out, for how long, with an injected
// clock and random draw.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "host_blacklist.h"

using namespace chorus::launcher;

namespace {

const double kForever = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("Without a cooldown range a failed host stays out for good", "[launcher][blacklist]") {
  HostBlacklist b;
  REQUIRE_FALSE(b.is_blacklisted("a", 0));
  REQUIRE(b.record_failure("a", 10));
  REQUIRE(b.is_blacklisted("a", 10));
  REQUIRE(b.is_blacklisted("a", 1e12));
  REQUIRE(b.blacklisted_until("a", 11) == kForever);
  REQUIRE_FALSE(b.blacklisted_until("b", 11));
  REQUIRE_FALSE(b.next_return(11));
  REQUIRE_FALSE(b.record_failure("a", 20));  // out already: nothing changes
  REQUIRE(b.times_blacklisted("a") == 1);
  REQUIRE(b.times_blacklisted("b") == 0);
}

TEST_CASE("With a cooldown range a host is out LO..2·LO, twice as long each time, at most HI",
          "[launcher][blacklist]") {
  int draws = 0;
  HostBlacklist b(CooldownRange{10, 100}, [&] {
    ++draws;
    return 0.5;
  });
  REQUIRE(b.record_failure("a", 0));  // 10 + 0.5 * 10
  REQUIRE(b.blacklisted_until("a", 0) == 15);
  REQUIRE(b.is_blacklisted("a", 14.9));
  REQUIRE_FALSE(b.is_blacklisted("a", 15));  // retried
  REQUIRE_FALSE(b.record_failure("a", 12));  // a second worker of it failing meanwhile counts once
  REQUIRE(draws == 1);
  REQUIRE(b.blacklisted_until("a", 12) == 15);

  REQUIRE(b.record_failure("a", 20));  // 2nd: 20 + 5
  REQUIRE(b.blacklisted_until("a", 20) == 45);
  REQUIRE(b.record_failure("a", 50));  // 3rd: 40 + 5
  REQUIRE(b.blacklisted_until("a", 50) == 95);
  REQUIRE(b.record_failure("a", 100));  // 4th: 80 + 5
  REQUIRE(b.blacklisted_until("a", 100) == 185);
  REQUIRE(b.record_failure("a", 200));  // 5th: 160 + 5, capped at HI
  REQUIRE(b.blacklisted_until("a", 200) == 300);
  REQUIRE(b.times_blacklisted("a") == 5);
  REQUIRE(draws == 5);
}

TEST_CASE("The random part of a cooldown stays within [LO, 2·LO) the first time", "[launcher][blacklist]") {
  HostBlacklist low(CooldownRange{10, 100}, [] { return 0.0; });
  low.record_failure("a", 0);
  REQUIRE(low.blacklisted_until("a", 0) == 10);
  HostBlacklist high(CooldownRange{10, 100}, [] { return 0.999; });
  high.record_failure("a", 0);
  REQUIRE(*high.blacklisted_until("a", 0) == Approx(19.99));
  HostBlacklist narrow(CooldownRange{10, 12}, [] { return 0.9; });
  narrow.record_failure("a", 0);
  REQUIRE(narrow.blacklisted_until("a", 0) == 12);  // HI caps even the first
  HostBlacklist seeded(CooldownRange{10, 100});     // the default generator
  for (int i = 0; i < 20; ++i) {
    const std::string host = "h" + std::to_string(i);
    seeded.record_failure(host, 0);
    REQUIRE(*seeded.blacklisted_until(host, 0) >= 10);
    REQUIRE(*seeded.blacklisted_until(host, 0) < 20);
  }
}

TEST_CASE("A cooldown never overflows, and LO = 0 retries at once", "[launcher][blacklist]") {
  HostBlacklist b(CooldownRange{1, 3600}, [] { return 0.5; });
  double now = 0;
  for (int i = 0; i < 3000; ++i) {
    REQUIRE(b.record_failure("a", now));
    const double until = *b.blacklisted_until("a", now);
    REQUIRE(std::isfinite(until));
    REQUIRE(until - now <= 3600);
    now = until;
  }
  HostBlacklist zero(CooldownRange{0, 60}, [] { return 0.5; });
  REQUIRE(zero.record_failure("a", 5));
  REQUIRE_FALSE(zero.is_blacklisted("a", 5));
  REQUIRE(zero.times_blacklisted("a") == 1);
}

TEST_CASE("The hosts out now, in the order they went out, and the next return", "[launcher][blacklist]") {
  HostBlacklist b(CooldownRange{10, 100}, [] { return 0.0; });
  b.record_failure("c", 0);  // until 10
  b.record_failure("a", 5);  // until 15
  b.record_failure("b", 6);  // until 16
  REQUIRE(b.blacklisted_hosts(7) == std::vector<std::string>{"c", "a", "b"});
  REQUIRE(b.next_return(7) == 10);
  REQUIRE(b.blacklisted_hosts(12) == std::vector<std::string>{"a", "b"});
  REQUIRE(b.next_return(12) == 15);
  b.record_failure("c", 13);  // back in, 2nd time: until 33, keeps its first place
  REQUIRE(b.blacklisted_hosts(13) == std::vector<std::string>{"c", "a", "b"});
  REQUIRE(b.blacklisted_hosts(20) == std::vector<std::string>{"c"});
  REQUIRE(b.next_return(20) == 33);
  REQUIRE(b.blacklisted_hosts(40).empty());
  REQUIRE_FALSE(b.next_return(40));
}
