// The response cache alone: hits need the same signature, keys go stale
// when a slot is refilled, least recently used entries are evicted, and
// identical sequences of updates give identical caches (what keeps ranks in
// agreement).
#include <catch2/catch.hpp>

#include "negotiation/response_cache.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
Request req(const std::string& name, int64_t n = 8, int rank = 0) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {n};
  return r;
}
}  // namespace

TEST_CASE("A cached signature is found by name and resolved by key", "[cache]") {
  ResponseCache cache(4);
  REQUIRE_FALSE(cache.lookup(req("a")));
  cache.put(req("a", 8, 3));
  const auto key = cache.lookup(req("a", 8, 1));  // any rank, same signature
  REQUIRE(key);
  const Request* r = cache.resolve(*key);
  REQUIRE(r != nullptr);
  REQUIRE(r->name == "a");
  REQUIRE(r->shape == std::vector<int64_t>{8});
  REQUIRE_FALSE(cache.lookup(req("a", 9)));  // another shape: a miss
  Request other_op = req("a");
  other_op.op = ReduceOp::kMax;
  REQUIRE_FALSE(cache.lookup(other_op));
}

TEST_CASE("A new signature refills the slot and makes old keys stale", "[cache]") {
  ResponseCache cache(4);
  cache.put(req("a", 8));
  const CacheKey old_key = *cache.lookup(req("a", 8));
  cache.put(req("a", 16));  // every rank changed the shape consistently
  REQUIRE(cache.resolve(old_key) == nullptr);
  const CacheKey new_key = *cache.lookup(req("a", 16));
  REQUIRE(new_key.slot == old_key.slot);
  REQUIRE(new_key.generation != old_key.generation);
  REQUIRE(cache.resolve(new_key)->shape == std::vector<int64_t>{16});
}

TEST_CASE("The least recently used entry is evicted; erase frees a slot", "[cache]") {
  ResponseCache cache(2);
  cache.put(req("a"));
  cache.put(req("b"));
  const CacheKey a = *cache.lookup(req("a"));
  cache.put(req("a"));  // a is now the most recently used
  cache.put(req("c"));  // evicts b
  REQUIRE(cache.size() == 2);
  REQUIRE(cache.lookup(req("a")));
  REQUIRE_FALSE(cache.lookup(req("b")));
  REQUIRE(cache.lookup(req("c")));
  REQUIRE(cache.resolve(a) != nullptr);  // a refresh keeps the key valid
  const CacheKey c = *cache.lookup(req("c"));
  cache.erase("c");
  REQUIRE(cache.resolve(c) == nullptr);
  REQUIRE_FALSE(cache.lookup(req("c")));
  cache.put(req("d"));
  REQUIRE(cache.size() == 2);
}

TEST_CASE("Capacity 0 turns the cache off", "[cache]") {
  ResponseCache cache(0);
  cache.put(req("a"));
  REQUIRE_FALSE(cache.lookup(req("a")));
  REQUIRE(cache.resolve(CacheKey{0, 1}) == nullptr);
  REQUIRE(cache.size() == 0);
}

TEST_CASE("The same updates give the same keys on every rank", "[cache]") {
  ResponseCache rank0(3), rank1(3);
  const char* names[] = {"w1", "w2", "w3", "w1", "w4", "w5", "w2", "w1", "w6"};
  for (const char* n : names) {
    rank0.put(req(n, 4, 0));
    rank1.put(req(n, 4, 1));
    if (std::string(n) == "w4") {
      rank0.erase("w3");
      rank1.erase("w3");
    }
  }
  for (const char* n : names) {
    const auto k0 = rank0.lookup(req(n)), k1 = rank1.lookup(req(n));
    REQUIRE(k0.has_value() == k1.has_value());
    if (k0) REQUIRE(*k0 == *k1);
  }
}

TEST_CASE("A key whose name hash does not match is stale (caches that drifted apart)", "[cache]") {
  ResponseCache cache(2);
  cache.put(req("a"));
  CacheKey key = *cache.lookup(req("a"));
  REQUIRE(key.name_hash == name_hash("a"));
  REQUIRE(cache.resolve(key) != nullptr);
  key.name_hash ^= 1;
  REQUIRE(cache.resolve(key) == nullptr);
}
