// Error paths under mpirun: every mismatch kind fails on every rank with a
// message naming the tensor and the ranks; duplicate names; broadcast;
// shutdown of one rank while others submit; enqueue after shutdown; re-init.
// Declared after the allreduce cases; the shutdown cases run last.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"

using namespace chorus;

namespace {

std::shared_ptr<HostTensorView> view(std::vector<float>& v) {
  return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32,
                                          TensorShape{static_cast<int64_t>(v.size())});
}

std::string invalid_argument_message(const Handle& h) {
  try {
    h.wait(std::chrono::seconds(60));
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  FAIL("expected InvalidArgumentError");
  return "";
}

}  // namespace

TEST_CASE("Broadcast from every root", "[mpi][broadcast]") {
  const int rank = chorus::rank(), size = chorus::size();
  for (int root = 0; root < size; ++root) {
    std::vector<float> v(1000, float(rank * 10));
    broadcast_async("bcast." + std::to_string(root), view(v), root).wait();
    REQUIRE(v[0] == float(root * 10));
    REQUIRE(v[999] == float(root * 10));
  }
}

TEST_CASE("Broadcast out of place from every root leaves the input alone", "[mpi][broadcast]") {
  const int rank = chorus::rank(), size = chorus::size();
  for (int root = 0; root < size; ++root) {
    std::vector<int64_t> in(257, rank * 1000), out(257, -1);
    auto tin = std::make_shared<HostTensorView>(in.data(), DataType::kInt64, TensorShape{257});
    auto tout = std::make_shared<HostTensorView>(out.data(), DataType::kInt64, TensorShape{257});
    broadcast_async("bcast.oop." + std::to_string(root), tin, tout, root).wait();
    REQUIRE(out.front() == root * 1000);
    REQUIRE(out.back() == root * 1000);
    REQUIRE(in.back() == rank * 1000);
  }
  std::vector<float> a(4), b(5);
  REQUIRE_THROWS_WITH(broadcast_async("bcast.sizes", view(a), view(b), 0).wait(std::chrono::seconds(60)), Catch::Contains("[5]"));
}

TEST_CASE("Each kind of mismatch fails on every rank", "[mpi][errors]") {
  const int rank = chorus::rank(), size = chorus::size();
  const int odd = size - 1;  // the rank that disagrees
  const std::string odd_rank = "on rank " + std::to_string(odd);
  std::vector<float> v(8, 1.0f);

  SECTION("dtype") {
    std::vector<double> d(8, 1.0);
    std::shared_ptr<Tensor> t = view(v);
    if (rank == odd) t = std::make_shared<HostTensorView>(d.data(), DataType::kFloat64, TensorShape{8});
    auto m = invalid_argument_message(allreduce_async("mm.dtype", t, t));
    REQUIRE_THAT(m, Catch::Contains("'mm.dtype'") && Catch::Contains("float64 " + odd_rank));
  }
  SECTION("shape") {
    std::vector<float> w(rank == odd ? 9 : 8, 1.0f);
    auto m = invalid_argument_message(allreduce_async("mm.shape", view(w), view(w)));
    REQUIRE_THAT(m, Catch::Contains("'mm.shape'") && Catch::Contains("[9] " + odd_rank));
  }
  SECTION("reduce op") {
    AllreduceOptions o;
    o.op = rank == odd ? ReduceOp::kMax : ReduceOp::kSum;
    auto m = invalid_argument_message(allreduce_async("mm.op", view(v), view(v), o));
    REQUIRE_THAT(m, Catch::Contains("reduce op differs") && Catch::Contains("max " + odd_rank));
  }
  SECTION("prescale") {
    AllreduceOptions o;
    o.prescale_factor = rank == odd ? 2.0 : 1.0;
    auto m = invalid_argument_message(allreduce_async("mm.pre", view(v), view(v), o));
    REQUIRE_THAT(m, Catch::Contains("prescale factor differs") && Catch::Contains("2 " + odd_rank));
  }
  SECTION("postscale") {
    AllreduceOptions o;
    o.postscale_factor = rank == odd ? 0.25 : 1.0;
    auto m = invalid_argument_message(allreduce_async("mm.post", view(v), view(v), o));
    REQUIRE_THAT(m, Catch::Contains("postscale factor differs") && Catch::Contains("0.25 " + odd_rank));
  }
  SECTION("broadcast root") {
    auto m = invalid_argument_message(broadcast_async("mm.root", view(v), rank == odd ? 1 % size : 0));
    if (size > 1) REQUIRE_THAT(m, Catch::Contains("root rank differs"));
  }
  SECTION("broadcast root outside the job on one rank only") {
    // That rank must not throw alone at the call: the others would wait.
    auto m = invalid_argument_message(broadcast_async("mm.root.outside", view(v), rank == odd ? size + 3 : 0));
    if (size > 1) {
      REQUIRE_THAT(m, Catch::Contains("root rank differs") &&
                          Catch::Contains(std::to_string(size + 3) + " (outside 0.." + std::to_string(size - 1) + ") " + odd_rank));
    } else {
      REQUIRE_THAT(m, Catch::Contains("root rank 4 is outside 0..0"));
    }
  }
  SECTION("broadcast root outside the job on every rank") {
    auto m = invalid_argument_message(broadcast_async("mm.root.all.outside", view(v), -1));
    REQUIRE_THAT(m, Catch::Contains("'mm.root.all.outside'") &&
                        Catch::Contains("root rank -1 is outside 0.." + std::to_string(size - 1)));
  }
  SECTION("allreduce here, broadcast there") {
    Handle h = rank == odd ? broadcast_async("mm.kind", view(v), 0) : allreduce_async("mm.kind", view(v), view(v));
    auto m = invalid_argument_message(h);
    REQUIRE_THAT(m, Catch::Contains("operation differs") && Catch::Contains("broadcast " + odd_rank));
  }
  // The runtime keeps working after each error.
  std::vector<float> ok(3, 1.0f);
  allreduce_async("after.mismatch", view(ok), view(ok)).wait();
  REQUIRE(ok[0] == 1.0f);
}

TEST_CASE("Bad input on one rank fails every rank, naming that rank, and the name works again", "[mpi][errors][refused]") {
  const int rank = chorus::rank(), size = chorus::size();
  const int odd = size - 1;  // the rank that passes bad input
  const std::string refused_on = "refused on rank " + std::to_string(odd) + ": ";
  std::vector<float> v(6, float(rank));
  // Allgather: a scalar on the odd rank, one row of 6 elsewhere.
  auto input = std::make_shared<HostTensorView>(v.data(), DataType::kFloat32,
                                                rank == odd ? TensorShape{} : TensorShape{1, 6});
  std::string m = invalid_argument_message(allgather_async("refused.gather", input));
  REQUIRE_THAT(m, Catch::Contains("allgather of tensor 'refused.gather' " + refused_on + "a scalar cannot be gathered"));
  Handle gathered =
      allgather_async("refused.gather", std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{1, 6}));
  gathered.wait(std::chrono::seconds(60));
  REQUIRE(gathered.output()->shape().dim_size(0) == size);
  REQUIRE(static_cast<const float*>(gathered.output()->data())[6 * odd] == float(odd));
  // Allreduce, cached on every rank first: the others send cache bits, the
  // odd rank a refusal (an output of another size).
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  std::vector<float> w(4, 1.0f), five(5, 1.0f);
  for (int round = 0; round < 2; ++round) allreduce_async("refused.sum", view(w), view(w), sum).wait();
  m = invalid_argument_message(allreduce_async("refused.sum", view(w), rank == odd ? view(five) : view(w), sum));
  REQUIRE_THAT(m, Catch::Contains("allreduce of tensor 'refused.sum' " + refused_on +
                                  "input has shape [4] but output has shape [5]"));
  std::vector<float> ones(4, 1.0f);
  allreduce_async("refused.sum", view(ones), view(ones), sum).wait();
  REQUIRE(ones[3] == float(size));
}

TEST_CASE("A grouped allreduce whose member count differs across ranks fails every rank, then works", "[mpi][errors][group]") {
  const int rank = chorus::rank(), size = chorus::size();
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  for (int odd : {0, size - 1}) {  // the coordinator's own group is the larger, then a worker's
    std::vector<std::vector<float>> bufs(3, std::vector<float>(7, 1.0f));
    std::vector<std::string> names = {"count.0", "count.1"};
    std::vector<std::shared_ptr<Tensor>> tensors = {view(bufs[0]), view(bufs[1])};
    if (rank == odd) {
      names.push_back("count.2");
      tensors.push_back(view(bufs[2]));
    }
    for (const Handle& h : grouped_allreduce_async(names, tensors, {}, sum)) {
      const std::string m = invalid_argument_message(h);
      REQUIRE_THAT(m, Catch::Contains("Grouped allreduce") && Catch::Contains("3 tensors") &&
                          Catch::Contains("rank " + std::to_string(odd)));
    }
    for (const Handle& h : grouped_allreduce_async({"count.0", "count.1"}, {view(bufs[0]), view(bufs[1])}, {}, sum)) {
      h.wait(std::chrono::seconds(60));
    }
    REQUIRE(bufs[0][6] == float(size));
    REQUIRE(bufs[1][0] == float(size));
    REQUIRE(bufs[2][0] == 1.0f);  // the failed member was left alone
  }
}

TEST_CASE("A duplicate in-flight name is refused on the rank that repeats it", "[mpi][errors]") {
  // The other ranks submit only after the barrier, so rank 0's first
  // "dup.name" is surely still in flight when it tries the duplicate.
  std::vector<float> a(4, 1.0f), b(4, 1.0f);
  Handle h;
  if (chorus::rank() == 0) {
    h = allreduce_async("dup.name", view(a), view(a));
    REQUIRE_THROWS_AS(allreduce_async("dup.name", view(b), view(b)), InvalidArgumentError);
  }
  barrier();
  if (chorus::rank() != 0) h = allreduce_async("dup.name", view(a), view(a));
  h.wait();
}

TEST_CASE("One rank shuts down while the others submit: they get errors, then all re-init", "[mpi][shutdown]") {
  const int rank = chorus::rank(), size = chorus::size();
  const int leaver = size - 1;
  std::vector<float> v(4, 1.0f);
  if (size > 1) {
    if (rank == leaver) {
      chorus::shutdown();
      REQUIRE_FALSE(chorus::is_initialized());
      REQUIRE_FALSE(chorus::is_running());
    } else {
      // The shutdown may reach this rank before or after it enqueues: the
      // enqueue itself or the wait fails, naming the tensor and the reason.
      try {
        allreduce_async("orphan", view(v), view(v)).wait(std::chrono::seconds(60));
        FAIL("expected AbortedError");
      } catch (const AbortedError& e) {
        REQUIRE_THAT(std::string(e.what()), Catch::Contains("'orphan'") &&
                                                Catch::Contains("rank " + std::to_string(leaver) + " called shutdown()"));
      }
      // As Horovod's: initialized until this rank's own shutdown(); the
      // runtime no longer runs, and a later call says who stopped it.
      REQUIRE(chorus::is_initialized());
      REQUIRE_FALSE(chorus::is_running());
      try {
        allreduce_async("after.remote.shutdown", view(v), view(v)).wait(std::chrono::seconds(60));
        FAIL("expected AbortedError");
      } catch (const AbortedError& e) {
        REQUIRE_THAT(std::string(e.what()), Catch::Contains("rank " + std::to_string(leaver) + " called shutdown()"));
      }
    }
  }
  chorus::shutdown();
  REQUIRE_THROWS_AS(allreduce_async("after.shutdown", view(v), view(v)), PreconditionError);
  REQUIRE_THROWS_AS(chorus::rank(), PreconditionError);

  chorus::init();  // re-init after shutdown
  REQUIRE(chorus::is_initialized());
  REQUIRE(chorus::is_running());
  REQUIRE(chorus::rank() == rank);
  std::vector<float> w(4, float(rank));
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  allreduce_async("after.reinit", view(w), view(w), sum).wait();
  REQUIRE(w[0] == float(size * (size - 1) / 2));
}

TEST_CASE("shutdown() on one thread while others call in: errors, never a crash; then re-init", "[mpi][shutdown][threads]") {
  const int rank = chorus::rank(), size = chorus::size();
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, calls{0};
  auto caller = [&](int id) {
    std::vector<float> v(4, 1.0f);
    for (int i = 0; !stop.load(); ++i) {
      try {
        (void)chorus::rank();
        (void)chorus::size();
        (void)chorus::allocate_shared_host(64);
        const std::string name = "race." + std::to_string(id) + "." + std::to_string(i);
        allreduce_async(name, view(v), view(v)).wait(std::chrono::seconds(60));
        ++calls;
      } catch (const Error&) {
        ++errors;  // PreconditionError or AbortedError: either is right
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(caller, t);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread second_stopper([] { chorus::shutdown(); });  // two shutdowns at once are fine too
  chorus::shutdown();
  second_stopper.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto& t : threads) t.join();
  REQUIRE(errors.load() > 0);
  REQUIRE_FALSE(chorus::is_initialized());

  chorus::init();
  std::vector<float> w(4, float(rank));
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  allreduce_async("after.race", view(w), view(w), sum).wait();
  REQUIRE(w[0] == float(size * (size - 1) / 2));
}
