// The response cache alone: hits need the same signature, every change of a
// slot's content advances the epoch (so bits set before it go stale), each
// change is recorded with the request the slot held before it,
// least recently used entries are evicted, and identical sequences of
// updates give identical caches (what keeps ranks in agreement).
#include <catch2/catch.hpp>

#include "entry_helpers.h"
#include "negotiation/response_cache.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
using test::req;

// Each recorded change as slot:old name.
std::vector<std::string> changes_of(const ResponseCache& cache) {
  std::vector<std::string> out;
  for (const ResponseCache::SlotChange& c : cache.changes()) out.push_back(std::to_string(c.slot) + ":" + c.old.name);
  return out;
}
}  // namespace

TEST_CASE("A cached signature is found by name, its slot holds the request", "[cache]") {
  ResponseCache cache(4);
  REQUIRE_FALSE(cache.lookup(req("a")));
  cache.put(req("a", 8, 3));
  const auto slot = cache.lookup(req("a", 8, 1));  // any rank, same signature
  REQUIRE(slot);
  REQUIRE(cache.slot_of("a") == *slot);
  const Request* r = cache.at(*slot);
  REQUIRE(r != nullptr);
  REQUIRE(r->name == "a");
  REQUIRE(r->rank == 0);
  REQUIRE(r->shape == std::vector<int64_t>{8});
  REQUIRE_FALSE(cache.lookup(req("a", 9)));  // another shape: a miss
  Request other_op = req("a");
  other_op.op = ReduceOp::kMax;
  REQUIRE_FALSE(cache.lookup(other_op));
  REQUIRE(cache.at(-1) == nullptr);
  REQUIRE(cache.at(4) == nullptr);
  REQUIRE(cache.slot_of("b") == -1);
}

TEST_CASE("A new signature refills the slot: bits set before it are stale", "[cache]") {
  ResponseCache cache(4);
  cache.put(req("a", 8));
  const int32_t slot = *cache.lookup(req("a", 8));
  const uint64_t then = cache.epoch();
  REQUIRE(cache.unchanged_since(slot, then));
  cache.put(req("a", 8));  // a refresh changes nothing
  REQUIRE(cache.epoch() == then);
  REQUIRE(cache.unchanged_since(slot, then));
  cache.put(req("a", 16));  // every rank changed the shape consistently
  REQUIRE(cache.epoch() == then + 1);
  REQUIRE_FALSE(cache.unchanged_since(slot, then));
  REQUIRE(cache.unchanged_since(slot, cache.epoch()));
  REQUIRE(*cache.lookup(req("a", 16)) == slot);
  REQUIRE(cache.at(slot)->shape == std::vector<int64_t>{16});
}

TEST_CASE("The least recently used entry is evicted; erase frees a slot; changes keep the old request", "[cache]") {
  ResponseCache cache(2);
  cache.put(req("a"));
  cache.put(req("b"));
  const int32_t a = *cache.lookup(req("a")), b = *cache.lookup(req("b"));
  const uint64_t before = cache.epoch();
  cache.put(req("a"));  // a is now the most recently used
  cache.put(req("c"));  // evicts b
  REQUIRE(cache.size() == 2);
  REQUIRE(cache.lookup(req("a")));
  REQUIRE_FALSE(cache.lookup(req("b")));
  REQUIRE(*cache.lookup(req("c")) == b);  // b's slot, refilled
  REQUIRE(cache.unchanged_since(a, before));  // a refresh keeps a's bits valid
  REQUIRE_FALSE(cache.unchanged_since(b, before));
  const uint64_t with_c = cache.epoch();
  cache.erase("c");
  REQUIRE_FALSE(cache.unchanged_since(b, with_c));  // an empty slot means nothing
  REQUIRE_FALSE(cache.lookup(req("c")));
  cache.erase("never cached");
  cache.put(req("d"));
  REQUIRE(cache.size() == 2);
  // Fills of free slots have nothing to settle; evictions, refills and erases do.
  REQUIRE(changes_of(cache) == std::vector<std::string>{std::to_string(b) + ":b", std::to_string(b) + ":c"});
  REQUIRE(cache.changes()[0].old.shape == std::vector<int64_t>{8});  // the whole old request
  cache.clear_changes();
  REQUIRE(cache.changes().empty());
  cache.put(req("d", 16));  // a refill with a new signature
  REQUIRE(changes_of(cache) == std::vector<std::string>{std::to_string(*cache.lookup(req("d", 16))) + ":d"});
  REQUIRE(cache.changes()[0].old.shape == std::vector<int64_t>{8});
}

TEST_CASE("Capacity 0 turns the cache off", "[cache]") {
  ResponseCache cache(0);
  cache.put(req("a"));
  REQUIRE_FALSE(cache.lookup(req("a")));
  REQUIRE(cache.at(0) == nullptr);
  REQUIRE(cache.size() == 0);
  REQUIRE(cache.epoch() == 0);
}

TEST_CASE("Allgathers, barriers, registrations and joins are not cached", "[cache]") {
  ResponseCache cache(4);
  for (CollectiveType t : {CollectiveType::kAllgather, CollectiveType::kAlltoall, CollectiveType::kBarrier,
                           CollectiveType::kAddProcessSet, CollectiveType::kJoin}) {
    Request r = req("x");
    r.type = t;
    cache.put(r);
    REQUIRE_FALSE(cache.lookup(r));
  }
  REQUIRE(cache.size() == 0);
}

TEST_CASE("The same updates give the same slots and epochs on every rank", "[cache]") {
  ResponseCache rank0(3), rank1(3);
  const char* names[] = {"w1", "w2", "w3", "w1", "w4", "w5", "w2", "w1", "w6"};
  for (const char* n : names) {
    rank0.put(req(n, 4, 0));
    rank1.put(req(n, 4, 1));
    if (std::string(n) == "w4") {
      rank0.erase("w3");
      rank1.erase("w3");
    }
    REQUIRE(rank0.epoch() == rank1.epoch());
  }
  for (const char* n : names) {
    const auto s0 = rank0.lookup(req(n)), s1 = rank1.lookup(req(n));
    REQUIRE(s0.has_value() == s1.has_value());
    if (s0) REQUIRE(*s0 == *s1);
  }
}

TEST_CASE("Refresh by slot moves the entry to the front, or puts it again when the slot moved on", "[cache]") {
  ResponseCache cache(2);
  cache.put(req("a"));
  cache.put(req("b"));
  const int32_t a = *cache.lookup(req("a"));
  const uint64_t epoch = cache.epoch();
  cache.refresh(a, req("a"));  // a is the most recently used now: c evicts b
  REQUIRE(cache.epoch() == epoch);
  cache.put(req("c"));
  REQUIRE(cache.lookup(req("a")));
  REQUIRE_FALSE(cache.lookup(req("b")));
  // b completed under a slot that c holds now: b is cached again, as put() would.
  const int32_t c = *cache.lookup(req("c"));
  cache.refresh(c, req("b"));
  REQUIRE(cache.lookup(req("b")));
  REQUIRE(cache.lookup(req("c")));
  REQUIRE_FALSE(cache.lookup(req("a")));  // the least recently used went
}
