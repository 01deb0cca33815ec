// The hand-off between framework threads and the background thread.
#include <catch2/catch.hpp>

#include "entry_helpers.h"

#include "engine/tensor_queue.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
using chorus::test::entry;
std::vector<TensorEntry> batch(std::initializer_list<const char*> names) {
  std::vector<TensorEntry> out;
  for (const char* n : names) out.push_back(entry(n));
  return out;
}
}  // namespace

TEST_CASE("A name in flight cannot be enqueued again until it completes", "[queue]") {
  TensorQueue q;
  REQUIRE(q.add(batch({"a"})).is_ok());
  Status dup = q.add(batch({"a"}));
  REQUIRE(dup.code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(dup.message(), Catch::Contains("'a'") && Catch::Contains("already in flight"));
  TensorEntry taken;
  REQUIRE(q.take("a", &taken));
  REQUIRE(q.add(batch({"a"})).is_ok());
}

TEST_CASE("A batch is added all or nothing", "[queue]") {
  TensorQueue q;
  REQUIRE(q.add(batch({"a"})).is_ok());
  REQUIRE_FALSE(q.add(batch({"b", "a"})).is_ok());  // "a" clashes: "b" must not stay
  REQUIRE(q.in_flight() == 1);
  REQUIRE_FALSE(q.add(batch({"c", "c"})).is_ok());  // repeats within the batch
  REQUIRE(q.in_flight() == 1);
}

TEST_CASE("New requests come out once, in order", "[queue]") {
  TensorQueue q;
  REQUIRE(q.add(batch({"x", "y"})).is_ok());
  REQUIRE(q.add(batch({"z"})).is_ok());
  auto reqs = q.take_new_requests();
  REQUIRE(reqs.size() == 3);
  REQUIRE(reqs[0].name == "x");
  REQUIRE(reqs[2].name == "z");
  REQUIRE(q.take_new_requests().empty());
  REQUIRE(q.in_flight() == 3);  // still held until the coordinator answers
}

TEST_CASE("Closing returns what is held and refuses later adds with the reason", "[queue]") {
  TensorQueue q;
  REQUIRE(q.add(batch({"a", "b"})).is_ok());
  auto left = q.close(Status::aborted("rank 1 called shutdown()"));
  REQUIRE(left.size() == 2);
  Status s = q.add(batch({"c"}));
  REQUIRE(s.code() == StatusCode::kAborted);
  REQUIRE_THAT(s.message(), Catch::Contains("rank 1"));
  REQUIRE(q.in_flight() == 0);
}
