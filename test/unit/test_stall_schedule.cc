// Stall timing with a made-up clock: when waits are reported, when the next
// check is due, when the stall shutdown comes; rank 0's check and the
// workers' watch on rank 0 built on it.
#include <catch2/catch.hpp>

#include "entry_helpers.h"

#include "negotiation/stall_schedule.h"
#include "engine/coordinator_stall_check.h"
#include "engine/coordinator_watch.h"
#include "loopback_job.h"
#include "stderr_capture.h"

using namespace chorus;
using namespace chorus::detail;
using std::chrono::milliseconds;
using std::chrono::seconds;
using chorus::test::stall_options;

namespace {
using Clock = StallSchedule::Clock;
const Clock::time_point t0 = Clock::now();

// One check at `now` of the waits that began at `since`: which were reported.
std::vector<bool> check(StallSchedule& s, Clock::time_point now, std::vector<Clock::time_point> since,
                        bool* shutdown = nullptr) {
  s.begin_check(now);
  std::vector<bool> out;
  for (auto t : since) {
    StallSchedule::Verdict v = s.look_at(t);
    out.push_back(v.report);
    if (shutdown) *shutdown = *shutdown || v.shutdown;
  }
  return out;
}
}  // namespace

TEST_CASE("A wait is reported when it reaches N, not at the next fixed-period check", "[stall]") {
  StallSchedule s(10, 0, t0);
  // A check at 5 s sees a wait that began at 4 s: too young; the next check
  // is due when it turns 10 s (14 s), not at 15 s.
  REQUIRE(check(s, t0 + seconds(5), {t0 + seconds(4)}) == std::vector<bool>{false});
  REQUIRE_FALSE(s.due(t0 + milliseconds(13999)));
  REQUIRE(s.due(t0 + seconds(14)));
  REQUIRE(check(s, t0 + seconds(14), {t0 + seconds(4)}) == std::vector<bool>{true});
  // Again at 2N, and not at checks in between (made for other waits).
  REQUIRE(s.due(t0 + seconds(24)));
  REQUIRE_FALSE(s.due(t0 + milliseconds(23999)));
  REQUIRE(check(s, t0 + seconds(20), {t0 + seconds(4), t0 + seconds(10)}) == std::vector<bool>{false, true});
  REQUIRE(check(s, t0 + seconds(24), {t0 + seconds(4), t0 + seconds(10)}) == std::vector<bool>{true, false});
}

TEST_CASE("With nothing waiting the next check is N away; a late check reports a wait once", "[stall]") {
  StallSchedule s(2, 0, t0);
  REQUIRE(check(s, t0 + seconds(1), {}).empty());
  REQUIRE_FALSE(s.due(t0 + milliseconds(2999)));
  REQUIRE(s.due(t0 + seconds(3)));
  // A loop that wakes late (at 7.5 s for a wait begun at 1 s) reports it once, not per N passed.
  REQUIRE(check(s, t0 + milliseconds(7500), {t0 + seconds(1)}) == std::vector<bool>{true});
  REQUIRE(check(s, t0 + milliseconds(7600), {t0 + seconds(1)}) == std::vector<bool>{false});
}

TEST_CASE("The stall shutdown is due when a wait reaches S, checked for at that moment", "[stall]") {
  StallSchedule s(10, 15, t0);
  bool shutdown = false;
  check(s, t0 + seconds(12), {t0 + seconds(1)}, &shutdown);
  REQUIRE_FALSE(shutdown);
  REQUIRE(s.due(t0 + seconds(16)));  // 1 s + S, before the wait's 2N
  REQUIRE_FALSE(s.due(t0 + milliseconds(15999)));
  check(s, t0 + seconds(16), {t0 + seconds(1)}, &shutdown);
  REQUIRE(shutdown);
}

TEST_CASE("A stall check time of 0 disables the schedule", "[stall]") {
  StallSchedule s(0, 0, t0);
  REQUIRE_FALSE(s.enabled());
  REQUIRE_FALSE(s.due(t0 + seconds(1000)));
}

TEST_CASE("Stall shutdown reasons say the time plainly and are recognized", "[stall]") {
  REQUIRE(seconds_text(2) == "2 s");
  REQUIRE(seconds_text(0.5) == "0.5 s");
  const std::string r = stall_shutdown_reason(2, "tensor 'x' ...");
  REQUIRE(r == "stall shutdown after 2 s: tensor 'x' ...");
  REQUIRE(is_stall_shutdown(r));
  REQUIRE_FALSE(is_stall_shutdown("rank 1 called shutdown()"));
}

namespace {
Request req(int rank, const std::string& name) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {4};
  return r;
}
Topology topology(int rank, int size) {
  Topology t;
  t.rank = rank;
  t.size = size;
  return t;
}
}  // namespace

TEST_CASE("Rank 0 warns about a stalled tensor at N, naming the missing rank, and shuts down at S", "[stall]") {
  const RuntimeOptions o = stall_options(2, 3);
  Logger logger;
  CoordinatorStallCheck stall(o, topology(0, 3), logger, t0);
  Coordinator c(3);
  CachedReadiness readiness(3, 0);
  ResponseCache cache(0);
  c.add(req(0, "grad.w"), t0 + milliseconds(1500));
  c.add(req(1, "grad.w"), t0 + milliseconds(1600));
  chorus::test::StderrCapture err;
  REQUIRE_FALSE(stall.check(c, readiness, cache, t0 + seconds(2)).has_value());  // the fixed period's check: too young
  REQUIRE(err.text().empty());
  REQUIRE_FALSE(stall.check(c, readiness, cache, t0 + milliseconds(3499)).has_value());  // not due yet
  REQUIRE(err.text().empty());
  REQUIRE_FALSE(stall.check(c, readiness, cache, t0 + milliseconds(3500)).has_value());  // the wait turns N
  REQUIRE_THAT(err.text(), Catch::Contains("stall: tensor 'grad.w' has waited 2 s: submitted by ranks 0, 1, "
                                           "missing on ranks 2"));
  const std::optional<std::string> reason = stall.check(c, readiness, cache, t0 + milliseconds(4500));
  REQUIRE(reason.has_value());
  REQUIRE(*reason == "stall shutdown after 3 s: tensor 'grad.w' has waited 3 s: submitted by ranks 0, 1, "
                    "missing on ranks 2");
}

TEST_CASE("Rank 0 sends the workers something every N/2 while tensors wait", "[stall]") {
  const RuntimeOptions o = stall_options(2, 0);
  Logger logger;
  CoordinatorStallCheck stall(o, topology(0, 3), logger, t0);
  REQUIRE_FALSE(stall.heartbeat_due(false, t0 + seconds(5)));  // nothing waits: idle ranks stay quiet
  REQUIRE(stall.heartbeat_due(true, t0 + seconds(1)));
  stall.sent(t0 + seconds(1));
  REQUIRE_FALSE(stall.heartbeat_due(true, t0 + milliseconds(1999)));
  REQUIRE(stall.heartbeat_due(true, t0 + seconds(2)));
  CoordinatorStallCheck alone(o, topology(0, 1), logger, t0);
  REQUIRE_FALSE(alone.heartbeat_due(true, t0 + seconds(5)));
}

namespace {
using chorus::test::entry;
}  // namespace

TEST_CASE("A worker warns naming rank 0 once rank 0 has been silent for N while it waits", "[stall]") {
  const RuntimeOptions o = stall_options(2, 5);
  Logger logger;
  CoordinatorWatch watch(o, topology(1, 3), logger, t0);
  TensorQueue queue;
  chorus::test::StderrCapture err;
  REQUIRE_FALSE(watch.check(queue, t0 + seconds(10)).has_value());  // waits for nothing: silence is fine
  REQUIRE(queue.add(entry("grad.b")).is_ok());
  REQUIRE(queue.add(entry("grad.a")).is_ok());
  REQUIRE_FALSE(watch.check(queue, t0 + seconds(11)).has_value());  // starts waiting at 11 s
  watch.heard(t0 + seconds(12));                           // a live rank 0 speaks every N/2
  REQUIRE_FALSE(watch.check(queue, t0 + milliseconds(13900)).has_value());
  REQUIRE(err.text().empty());
  REQUIRE_FALSE(watch.check(queue, t0 + seconds(14)).has_value());   // silent since 12 s: N
  REQUIRE_THAT(err.text(), Catch::Contains("[chorus WARN] stall: no word from the coordinator, rank 0, for 2 s "
                                           "while rank 1 waits for tensors 'grad.a', 'grad.b'"));
  REQUIRE_FALSE(watch.check(queue, t0 + milliseconds(16999)).has_value());
  const std::optional<std::string> reason = watch.check(queue, t0 + seconds(17));
  REQUIRE(reason.has_value());
  REQUIRE_THAT(*reason, Catch::StartsWith("stall shutdown after 5 s: no word from the coordinator, rank 0, for 5 s"));
}

TEST_CASE("A worker's watch names the set's first rank by its global rank", "[stall]") {
  const RuntimeOptions o = stall_options(1, 0);
  Logger logger;
  Topology t = topology(1, 2);
  t.scope = SetScope{3, {2, 5}};
  CoordinatorWatch watch(o, t, logger, t0);
  TensorQueue queue;
  REQUIRE(queue.add(entry("x")).is_ok());
  chorus::test::StderrCapture err;
  watch.check(queue, t0);
  REQUIRE_FALSE(watch.check(queue, t0 + seconds(1)).has_value());  // no shutdown time: warnings only
  REQUIRE_THAT(err.text(), Catch::Contains("no word from the coordinator, rank 2 in process set 3 (ranks 2, 5), "
                                           "for 1 s while rank 5 waits for tensors 'x'"));
}
