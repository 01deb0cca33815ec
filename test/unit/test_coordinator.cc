// The coordinator's message table: counting, validation, groups, stalls.
#include <catch2/catch.hpp>

#include <algorithm>

#include "negotiation/coordinator.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
Request req(int rank, const std::string& name, DataType dtype = DataType::kFloat32,
            std::vector<int64_t> shape = {4}) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}
}  // namespace

TEST_CASE("A tensor is ready only once every rank submitted it", "[coordinator]") {
  Coordinator c(3);
  c.add(req(0, "w"));
  c.add(req(2, "w"));
  REQUIRE(c.take_ready().empty());
  REQUIRE_FALSE(c.idle());
  c.add(req(1, "w"));
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kAllreduce);
  REQUIRE(ready[0].response.names == std::vector<std::string>{"w"});
  REQUIRE(ready[0].response.total_bytes == 16);
  REQUIRE(c.idle());
}

TEST_CASE("Ready tensors come out in completion order", "[coordinator]") {
  Coordinator c(2);
  c.add(req(0, "a"));
  c.add(req(0, "b"));
  c.add(req(1, "b"));
  c.add(req(1, "a"));
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 2);
  REQUIRE(ready[0].response.names[0] == "b");
  REQUIRE(ready[1].response.names[0] == "a");
}

TEST_CASE("Mismatches name the tensor, the values and the ranks", "[coordinator]") {
  SECTION("dtype") {
    Coordinator c(3);
    c.add(req(0, "grad", DataType::kFloat32));
    c.add(req(1, "grad", DataType::kFloat16));
    c.add(req(2, "grad", DataType::kFloat32));
    auto ready = c.take_ready();
    REQUIRE(ready.size() == 1);
    REQUIRE(ready[0].response.type == ResponseType::kError);
    const std::string& m = ready[0].response.error_message;
    REQUIRE_THAT(m, Catch::Contains("'grad'"));
    REQUIRE_THAT(m, Catch::Contains("dtype differs: float32 on ranks 0, 2; float16 on rank 1"));
  }
  SECTION("shape") {
    Coordinator c(2);
    c.add(req(0, "t", DataType::kFloat32, {2, 3}));
    c.add(req(1, "t", DataType::kFloat32, {3, 2}));
    auto m = c.take_ready()[0].response.error_message;
    REQUIRE_THAT(m, Catch::Contains("shape differs: [2, 3] on rank 0; [3, 2] on rank 1"));
  }
  SECTION("op, prescale and postscale together") {
    Coordinator c(2);
    Request a = req(0, "t"), b = req(1, "t");
    b.op = ReduceOp::kMax;
    b.prescale = 2;
    b.postscale = 0.5;
    c.add(a);
    c.add(b);
    auto m = c.take_ready()[0].response.error_message;
    REQUIRE_THAT(m, Catch::Contains("reduce op differs: sum on rank 0; max on rank 1"));
    REQUIRE_THAT(m, Catch::Contains("prescale factor differs: 1 on rank 0; 2 on rank 1"));
    REQUIRE_THAT(m, Catch::Contains("postscale factor differs: 1 on rank 0; 0.5 on rank 1"));
  }
  SECTION("broadcast root") {
    Coordinator c(2);
    Request a = req(0, "p"), b = req(1, "p");
    a.type = b.type = CollectiveType::kBroadcast;
    b.root_rank = 1;
    c.add(a);
    c.add(b);
    auto m = c.take_ready()[0].response.error_message;
    REQUIRE_THAT(m, Catch::Contains("root rank differs: 0 on rank 0; 1 on rank 1"));
  }
  SECTION("allreduce on one rank, broadcast on another") {
    Coordinator c(2);
    Request b = req(1, "p");
    b.type = CollectiveType::kBroadcast;
    c.add(req(0, "p"));
    c.add(b);
    auto m = c.take_ready()[0].response.error_message;
    REQUIRE_THAT(m, Catch::Contains("operation differs: allreduce on rank 0; broadcast on rank 1"));
  }
}

TEST_CASE("A refused request fails the tensor, naming the refusing ranks and their reasons, even when all refuse",
          "[coordinator][refused]") {
  Coordinator c(3);
  Request refusing = req(1, "w", DataType::kFloat32, {});
  refusing.type = CollectiveType::kAllgather;
  refusing.refused = "allgather of tensor 'w': a scalar cannot be gathered";
  Request good = req(0, "w", DataType::kFloat32, {2, 4});
  good.type = CollectiveType::kAllgather;
  c.add(good);
  c.add(refusing);
  good.rank = 2;
  good.dtype = DataType::kFloat64;  // another mismatch: the refusal is what is reported
  c.add(good);
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kError);
  REQUIRE(ready[0].response.error_message ==
          "allgather of tensor 'w' refused on rank 1: a scalar cannot be gathered (the call fails on every rank)");
  // Every rank refusing with the same reason still fails (their signatures agree).
  for (int r = 0; r < 3; ++r) {
    refusing.rank = r;
    c.add(refusing);
  }
  ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kError);
  REQUIRE_THAT(ready[0].response.error_message, Catch::Contains("refused on ranks 0, 1, 2: a scalar"));
  REQUIRE(c.idle());
}

TEST_CASE("A second request from the same rank is an error, not a hang", "[coordinator]") {
  Coordinator c(2);
  c.add(req(0, "x"));
  c.add(req(0, "x"));
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kError);
  REQUIRE_THAT(ready[0].response.error_message, Catch::Contains("twice"));
}

TEST_CASE("Group members are released together", "[coordinator]") {
  Coordinator c(2);
  auto member = [](int rank, const char* name) {
    Request r = req(rank, name);
    r.group = "g";
    r.group_size = 2;
    return r;
  };
  c.add(member(0, "a"));
  c.add(member(0, "b"));
  c.add(member(1, "a"));
  REQUIRE(c.take_ready().empty());  // "a" complete, but "b" is not
  c.add(member(1, "b"));
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 2);
  REQUIRE(ready[0].response.names[0] == "a");
  REQUIRE(ready[1].response.names[0] == "b");
}

TEST_CASE("One bad member fails the whole group", "[coordinator]") {
  Coordinator c(2);
  auto member = [](int rank, const char* name, DataType dt) {
    Request r = req(rank, name, dt);
    r.group = "g";
    r.group_size = 2;
    return r;
  };
  c.add(member(0, "a", DataType::kFloat32));
  c.add(member(0, "b", DataType::kFloat32));
  c.add(member(1, "a", DataType::kFloat32));
  c.add(member(1, "b", DataType::kInt32));
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kError);
  REQUIRE(ready[0].response.names == std::vector<std::string>{"a", "b"});
  REQUIRE_THAT(ready[0].response.error_message, Catch::Contains("'b'") && Catch::Contains("int32 on rank 1"));
}

namespace {
Request group_member(int rank, const std::string& name, const std::string& group, int32_t size) {
  Request r = req(rank, name);
  r.group = group;
  r.group_size = size;
  return r;
}

// Every name the responses fail, each once: a name failed twice in one round
// could fail a rank's next call under it.
std::vector<std::string> failed_once(const std::vector<ReadyTensor>& ready) {
  std::vector<std::string> failed;
  for (const ReadyTensor& t : ready) {
    REQUIRE(t.response.type == ResponseType::kError);
    failed.insert(failed.end(), t.response.names.begin(), t.response.names.end());
  }
  std::sort(failed.begin(), failed.end());
  REQUIRE(std::adjacent_find(failed.begin(), failed.end()) == failed.end());
  return failed;
}

// Two ranks' request lists, in the order the generator picks.
template <class Rank0, class Rank1>
void arrive(bool rank0_first, Rank0 rank0, Rank1 rank1) {
  if (rank0_first) {
    rank0();
    rank1();
  } else {
    rank1();
    rank0();
  }
}
}  // namespace

TEST_CASE("Groups of different sizes on two ranks fail every member at once, in either arrival order", "[coordinator]") {
  // Rank 0 groups a, b, c; rank 1 only a, b: c would never complete.
  const bool rank0_first = GENERATE(true, false);
  Coordinator c(2);
  auto rank0 = [&] {
    for (const char* n : {"a", "b", "c"}) c.add(group_member(0, n, "group(a, 3 tensors)", 3));
  };
  auto rank1 = [&] {
    for (const char* n : {"a", "b"}) c.add(group_member(1, n, "group(a, 2 tensors)", 2));
  };
  arrive(rank0_first, rank0, rank1);
  const std::vector<ReadyTensor> failures = c.take_ready();
  REQUIRE(failed_once(failures) == std::vector<std::string>{"a", "b", "c"});
  for (const ReadyTensor& t : failures) {
    REQUIRE_THAT(t.response.error_message, Catch::Contains("Grouped allreduce") && Catch::Contains("3 tensors") &&
                                               Catch::Contains("2 tensors") && Catch::Contains("rank 1"));
  }
  REQUIRE(c.idle());  // nothing left waiting for a rank that will never send it
  // The next round's groups, now alike, complete.
  for (int r = 0; r < 2; ++r) {
    for (const char* n : {"a", "b"}) c.add(group_member(r, n, "group(a, 2 tensors)", 2));
  }
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 2);
  REQUIRE(ready[0].response.type == ResponseType::kAllreduce);
  REQUIRE(ready[1].response.type == ResponseType::kAllreduce);
}

TEST_CASE("A group failure spreads to the groups its members belong to on other ranks", "[coordinator]") {
  // Rank 0 buckets [a, b, c] [d]; rank 1 [a, b] [c, d]: c and d each sit in
  // a failed group on one rank, and every name must fail exactly once.
  const bool rank0_first = GENERATE(true, false);
  Coordinator c(2);
  auto rank0 = [&] {
    for (const char* n : {"a", "b", "c"}) c.add(group_member(0, n, "group(a, 3 tensors)", 3));
    c.add(group_member(0, "d", "group(d, 1 tensors)", 1));
  };
  auto rank1 = [&] {
    for (const char* n : {"a", "b"}) c.add(group_member(1, n, "group(a, 2 tensors)", 2));
    for (const char* n : {"c", "d"}) c.add(group_member(1, n, "group(c, 2 tensors)", 2));
  };
  arrive(rank0_first, rank0, rank1);
  REQUIRE(failed_once(c.take_ready()) == std::vector<std::string>{"a", "b", "c", "d"});
  REQUIRE(c.idle());
}

TEST_CASE("A join that fails a grouped allgather fails its waiting members once", "[coordinator][join]") {
  Coordinator c(2);
  for (const char* n : {"p", "q"}) {
    Request r = group_member(0, n, "allgather group(p, 2 tensors)", 2);
    r.type = CollectiveType::kAllgather;
    c.add(r);
  }
  Request join;
  join.type = CollectiveType::kJoin;
  join.name = join_tensor_name();
  join.rank = 1;
  c.add(join);  // p and q are now covered; p's failure takes q with it
  const std::vector<ReadyTensor> ready = c.take_ready();
  REQUIRE(failed_once(ready) == std::vector<std::string>{"p", "q"});
  REQUIRE_THAT(ready[0].response.error_message, Catch::Contains("called join()"));
  REQUIRE(c.idle());
}

TEST_CASE("A join fails the waiting collectives that cannot run beside it, covered or not", "[coordinator][join]") {
  // Horovod's test_horovod_join_allgather at 4 ranks, second round: rank 1
  // joins; rank 0, which joined in the first round, names its unnamed
  // allgather .0, ranks 2 and 3 name theirs .1, and all arrive before the join.
  Coordinator c(4);
  auto allgather = [](int rank, const char* name) {
    Request r;
    r.type = CollectiveType::kAllgather;
    r.name = name;
    r.shape = {17};
    r.rank = rank;
    return r;
  };
  c.add(allgather(0, "allgather.noname.0"));
  c.add(allgather(2, "allgather.noname.1"));
  c.add(allgather(3, "allgather.noname.1"));
  Request x;  // an allreduce waits on: it runs with the joined rank's zeros
  x.name = "x";
  x.shape = {4};
  x.rank = 0;
  c.add(x);
  REQUIRE(c.take_ready().empty());
  Request join;
  join.type = CollectiveType::kJoin;
  join.name = join_tensor_name();
  join.rank = 1;
  c.add(join);
  std::vector<ReadyTensor> ready = c.take_ready();
  REQUIRE(ready.size() == 2);
  for (const ReadyTensor& t : ready) {
    REQUIRE(t.response.type == ResponseType::kError);
    REQUIRE_THAT(t.response.error_message, Catch::Contains("rank(s) 1 called join()"));
  }
  for (int r : {2, 3}) {
    x.rank = r;
    c.add(x);
  }
  ready = c.take_ready();
  REQUIRE((ready.size() == 1 && ready[0].response.type == ResponseType::kAllreduce));
}

TEST_CASE("A failed group's member arriving in a later round is not failed by the old failure", "[coordinator]") {
  Coordinator c(2);
  c.add(group_member(0, "a", "g", 1));
  c.add(group_member(1, "a", "other", 1));
  REQUIRE(c.take_ready().size() == 1);  // the error
  c.add(group_member(0, "a", "g", 1));  // a new call: waits for rank 1 as usual
  REQUIRE(c.take_ready().empty());
  c.add(group_member(1, "a", "g", 1));
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kAllreduce);
}

TEST_CASE("Stalled tensors list who submitted and who is missing", "[coordinator]") {
  Coordinator c(4);
  const auto t0 = Coordinator::Clock::now();
  c.add(req(0, "late"), t0);
  c.add(req(2, "late"), t0);
  c.add(req(1, "fresh"), t0 + std::chrono::seconds(50));
  auto stalled = c.stalled(t0 + std::chrono::seconds(60), 30);
  REQUIRE(stalled.size() == 1);
  REQUIRE(stalled[0].name == "late");
  REQUIRE(stalled[0].submitted_ranks == std::vector<int>{0, 2});
  REQUIRE(stalled[0].missing_ranks == std::vector<int>{1, 3});
  REQUIRE(stalled[0].waiting_seconds == Approx(60));
}

TEST_CASE("Join: allreduces complete without joined ranks, other collectives fail, all joined answers", "[coordinator][join]") {
  Coordinator c(3);
  Request join;
  join.type = CollectiveType::kJoin;
  join.name = join_tensor_name();
  join.rank = 2;
  Request x;
  x.name = "x";
  x.shape = {4};
  x.rank = 0;
  c.add(x);
  c.add(join);  // rank 2 is out of data
  REQUIRE(c.take_ready().empty());
  x.rank = 1;
  c.add(x);
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kAllreduce);
  REQUIRE(ready[0].response.joined_specs.size() == 1);
  REQUIRE(ready[0].response.joined_specs[0].shape == std::vector<int64_t>{4});

  // A broadcast fails at each rank's request, not once every rank sent it:
  // ranks whose unnamed calls differ (the joined rank made none) would
  // otherwise wait for each other.
  Request b;
  b.type = CollectiveType::kBroadcast;
  b.name = "b";
  for (int r : {0, 1}) {
    b.rank = r;
    c.add(b);
    ready = c.take_ready();
    REQUIRE(ready.size() == 1);
    REQUIRE(ready[0].response.type == ResponseType::kError);
    REQUIRE_THAT(ready[0].response.error_message, Catch::Contains("rank(s) 2 called join()"));
  }
  b.name = "b.only.rank0";  // a name no other rank ever sends: fails all the same
  b.rank = 0;
  c.add(b);
  ready = c.take_ready();
  REQUIRE((ready.size() == 1 && ready[0].response.type == ResponseType::kError));

  for (int r : {1, 0}) {
    join.rank = r;
    c.add(join);
  }
  ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].response.type == ResponseType::kJoin);
  REQUIRE(ready[0].response.last_joined_rank == 0);
  REQUIRE(c.idle());
}
