// Join for uneven data under mpirun: each rank in turn runs out first; the
// others' allreduces complete with zeros from the joined ranks (Sum counts
// the ranks still active, Average divides by all ranks); join returns the
// last rank to join; other collectives fail on every active rank while a
// rank has joined.
#include <catch2/catch.hpp>

#include "chorus/chorus.h"

using namespace chorus;

namespace {
std::shared_ptr<HostTensorView> scalar_view(float* v) {
  return std::make_shared<HostTensorView>(v, DataType::kFloat32, TensorShape{1});
}

// Whether `message` says "rank(s) A, B called join()" with `rank` among them.
// A collective fails at the first request that reaches rank 0 while a rank
// has joined, so a rank whose request comes later may find more ranks joined
// (those whose call failed first and went on to join): the list is what rank
// 0 knew then, always with the rank that joined first.
bool names_joined_rank(const std::string& message, int rank) {
  const std::string lead = "rank(s) ", tail = " called join()";
  const size_t end = message.find(tail), begin = message.rfind(lead, end);
  if (end == std::string::npos || begin == std::string::npos) return false;
  const std::string list = ", " + message.substr(begin + lead.size(), end - begin - lead.size()) + ",";
  return list.find(", " + std::to_string(rank) + ",") != std::string::npos;
}

struct NamesJoinedRank : Catch::MatcherBase<std::string> {
  explicit NamesJoinedRank(int r) : rank(r) {}
  bool match(const std::string& message) const override { return names_joined_rank(message, rank); }
  std::string describe() const override { return "names rank " + std::to_string(rank) + " as joined"; }
  int rank;
};

// Each rank in turn runs out first. With `cached_names` every step reuses
// the same names, so the active ranks negotiate them by cache bits, which
// the coordinator must hand over to the full path when a rank joins.
void take_turns(bool cached_names) {
  const int rank = chorus::rank(), size = chorus::size();
  for (int first = 0; first < size; ++first) {
    // `first` has 2 steps, the next rank 3, ..., the rank before it size + 1.
    auto steps_of = [&](int r) { return 2 + ((r - first + size) % size); };
    for (int i = 0; i < steps_of(rank); ++i) {
      int active = 0;
      for (int r = 0; r < size; ++r) active += steps_of(r) > i;
      float sum = 1.0f, avg = 1.0f;
      AllreduceOptions s;
      s.op = ReduceOp::kSum;
      const std::string step = cached_names ? "cached" : std::to_string(first) + "." + std::to_string(i);
      Handle hs = allreduce_async("join.sum." + step, scalar_view(&sum), scalar_view(&sum), s);
      Handle ha = allreduce_async("join.avg." + step, scalar_view(&avg), scalar_view(&avg));
      hs.wait(std::chrono::seconds(60));
      ha.wait(std::chrono::seconds(60));
      REQUIRE(sum == float(active));
      REQUIRE(avg == Approx(double(active) / size));
    }
    const int last = join();
    REQUIRE(last == (size == 1 ? 0 : (first - 1 + size) % size));
  }
}
}  // namespace

TEST_CASE("Join: every rank takes a turn at running out first", "[mpi][join]") { take_turns(false); }

TEST_CASE("Join: the same with names negotiated through the response cache", "[mpi][join][cache]") {
  take_turns(true);
}

TEST_CASE("Join: other collectives fail while a rank has joined", "[mpi][join]") {
  const int rank = chorus::rank(), size = chorus::size();
  if (size == 1) return;
  const int joiner = size - 1;
  if (rank != joiner) {
    float v = 1.0f;
    try {
      allgather_async("join.gather", scalar_view(&v)).wait(std::chrono::seconds(60));
      FAIL("expected InvalidArgumentError");
    } catch (const InvalidArgumentError& e) {
      REQUIRE_THAT(std::string(e.what()), Catch::Contains("'join.gather'") && NamesJoinedRank(joiner));
    }
  }
  const int last = join();
  REQUIRE(last >= 0);
  REQUIRE(last < size);
  // Everything works again afterwards.
  float v = 1.0f;
  AllreduceOptions s;
  s.op = ReduceOp::kSum;
  allreduce_async("join.after", scalar_view(&v), scalar_view(&v), s).wait();
  REQUIRE(v == float(size));
}

TEST_CASE("A barrier that fails because a rank joined does not count: later barriers match", "[mpi][join][barrier]") {
  const int rank = chorus::rank(), size = chorus::size();
  if (size == 1) return;
  const int joiner = 0;  // the coordinator's own rank joins: the hardest case
  if (rank != joiner) {
    REQUIRE_THROWS_WITH(runtime().barrier_async().wait(std::chrono::seconds(60)), NamesJoinedRank(joiner));
    REQUIRE_THROWS_WITH(runtime().barrier_async().wait(std::chrono::seconds(60)), Catch::Contains("called join()"));
  }
  join();
  // Every rank, the joined one too, now meets in the same barriers; with a
  // barrier sequence that counted the failed ones, these would wait forever.
  for (int i = 0; i < 3; ++i) runtime().barrier_async().wait(std::chrono::seconds(60));
  // A second barrier while one is in flight is refused on that rank alone.
  if (rank == size - 1) {
    Handle first = runtime().barrier_async();
    REQUIRE_THROWS_WITH(runtime().barrier_async(), Catch::Contains("already in flight"));
    first.wait(std::chrono::seconds(60));
  } else {
    runtime().barrier_async().wait(std::chrono::seconds(60));
  }
}
