// Elastic training's world: which workers run on the hosts available now.
#include <catch2/catch.hpp>

#include "elastic_plan.h"

using namespace chorus::launcher;

namespace {

using Workers = std::vector<WorkerSlot>;

}  // namespace

TEST_CASE("Workers fill the hosts in order, up to max-np", "[launcher][elastic_plan]") {
  const std::vector<HostSlots> hosts = {{"a", 2}, {"b", 3}};
  REQUIRE(plan_workers(hosts, 4) == Workers{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}});
  REQUIRE(plan_workers(hosts, std::nullopt) == Workers{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}, {"b", 2}});
  REQUIRE(plan_workers(hosts, 100).size() == 5);
  REQUIRE(plan_workers(hosts, 0).empty());
  REQUIRE(plan_workers({}, 4).empty());
}

TEST_CASE("Usable hosts: not blacklisted, the previous ones first", "[launcher][elastic_plan]") {
  const std::vector<HostSlots> discovered = {{"c", 1}, {"a", 2}, {"b", 3}, {"d", 1}};
  REQUIRE(usable_hosts(discovered, {}, {}) == discovered);
  REQUIRE(usable_hosts(discovered, {"b"}, {}) == std::vector<HostSlots>{{"c", 1}, {"a", 2}, {"d", 1}});
  // a and b ran before (in that order), x is gone: a, then the new ones as discovered.
  REQUIRE(usable_hosts(discovered, {"b"}, {"a", "x", "b"}) == std::vector<HostSlots>{{"a", 2}, {"c", 1}, {"d", 1}});
  REQUIRE(usable_hosts(discovered, {}, {"b", "a"}) == std::vector<HostSlots>{{"b", 3}, {"a", 2}, {"c", 1}, {"d", 1}});
}

TEST_CASE("A host that appears first in discovery does not displace running workers", "[launcher][elastic_plan]") {
  const Workers running = {{"a", 0}, {"b", 0}};
  const std::vector<HostSlots> now = {{"c", 2}, {"a", 1}, {"b", 1}};  // c new, printed first
  const Workers plan = plan_workers(usable_hosts(now, {}, hosts_of(running)), 3, running);
  REQUIRE(plan == Workers{{"a", 0}, {"b", 0}, {"c", 0}});
  const WorkerChanges c = diff_workers(running, plan);
  REQUIRE(c.start == Workers{{"c", 0}});
  REQUIRE(c.stop.empty());
  REQUIRE(c.keep == running);
}

TEST_CASE("A host that grows does not displace a running worker at max-np", "[launcher][elastic_plan]") {
  const Workers running = {{"a", 0}, {"a", 1}, {"b", 0}};
  const Workers plan = plan_workers({{"a", 3}, {"b", 2}}, 3, running);
  REQUIRE(plan == running);
  const WorkerChanges c = diff_workers(running, plan);
  REQUIRE(c.start.empty());
  REQUIRE(c.stop.empty());
  // Below max-np the new slots fill, in rank order.
  REQUIRE(plan_workers({{"a", 3}, {"b", 2}}, 5, running) == Workers{{"a", 0}, {"a", 1}, {"a", 2}, {"b", 0}, {"b", 1}});
}

TEST_CASE("Workers of a host that is gone, blacklisted or smaller stop; others start", "[launcher][elastic_plan]") {
  const Workers running = {{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}};
  // a is gone, c came.
  const std::vector<HostSlots> now = {{"b", 2}, {"c", 2}};
  Workers plan = plan_workers(usable_hosts(now, {}, hosts_of(running)), 4, running);
  REQUIRE(plan == Workers{{"b", 0}, {"b", 1}, {"c", 0}, {"c", 1}});
  WorkerChanges c = diff_workers(running, plan);
  REQUIRE(c.start == Workers{{"c", 0}, {"c", 1}});
  REQUIRE(c.stop == Workers{{"a", 0}, {"a", 1}});
  REQUIRE(c.keep == Workers{{"b", 0}, {"b", 1}});
  // b blacklisted, a still there.
  plan = plan_workers(usable_hosts({{"a", 2}, {"b", 2}}, {"b"}, hosts_of(running)), 4, running);
  REQUIRE(plan == Workers{{"a", 0}, {"a", 1}});
  REQUIRE(diff_workers(running, plan).stop == Workers{{"b", 0}, {"b", 1}});
  // b down to one slot.
  plan = plan_workers({{"a", 2}, {"b", 1}}, 4, running);
  c = diff_workers(running, plan);
  REQUIRE(c.stop == Workers{{"b", 1}});
  REQUIRE(c.start.empty());
}

TEST_CASE("Every running host gone: nothing kept", "[launcher][elastic_plan]") {
  const Workers running = {{"a", 0}, {"b", 0}};
  const Workers plan = plan_workers(usable_hosts({{"c", 2}}, {}, hosts_of(running)), 4, running);
  const WorkerChanges c = diff_workers(running, plan);
  REQUIRE(c.keep.empty());
  REQUIRE(c.start == Workers{{"c", 0}, {"c", 1}});
  REQUIRE(c.stop == running);
}

TEST_CASE("A plan's hosts, once each, in order", "[launcher][elastic_plan]") {
  REQUIRE(hosts_of({{"b", 0}, {"b", 1}, {"a", 0}}) == std::vector<std::string>{"b", "a"});
  REQUIRE(hosts_of({}).empty());
}
