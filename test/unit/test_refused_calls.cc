// One rank refuses its own call (bad input it alone passed) while the others
// call with good input under the same name: the refusal is negotiated, so
// every rank's handle fails with one message naming the refusing rank and
// why, nobody waits, and the name works again afterwards.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "chorus/error.h"
#include "loopback_job.h"

using namespace chorus;
using chorus::test::run_ranks;

namespace {

constexpr auto kNoHang = std::chrono::seconds(60);  // a wait that times out throws TimeoutError

std::shared_ptr<HostTensorView> view(std::vector<float>& v, TensorShape shape) {
  return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, std::move(shape));
}
std::shared_ptr<HostTensorView> view(std::vector<float>& v) { return view(v, TensorShape{static_cast<int64_t>(v.size())}); }

// The message the handle failed with; a handle that succeeds fails the test.
std::string refusal(const Handle& h) {
  try {
    h.wait(kNoHang);
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  throw std::runtime_error("a refused call succeeded");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("A 0-dim allgather on rank 1 of 3 fails on every rank, naming rank 1; the name works again",
          "[runtime][errors][refused]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(2, float(rank));
    // Rank 1 passes a scalar, the others one row each.
    auto input = rank == 1 ? view(v, TensorShape{}) : view(v, TensorShape{1, 2});
    const std::string m = refusal(rt.allgather_async("gathered", input));
    RANK_CHECK(contains(m, "allgather of tensor 'gathered' refused on rank 1: a scalar cannot be gathered"));
    RANK_CHECK(contains(m, "reshape it to [1]"));
    RANK_CHECK(contains(m, "fails on every rank"));
    // The same name with good input on every rank: gathered in rank order.
    Handle ok = rt.allgather_async("gathered", view(v, TensorShape{1, 2}));
    ok.wait(kNoHang);
    RANK_CHECK(ok.output()->shape().dim_size(0) == 3);
    RANK_CHECK(static_cast<const float*>(ok.output()->data())[4] == 2.0f);
  });
}

TEST_CASE("A refusal of a cached allreduce fails every rank, also those that sent cache bits", "[runtime][errors][refused]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1.0f), other(5, 1.0f);
    rt.allreduce_async("w", view(v), view(v)).wait(kNoHang);  // cached on every rank now
    rt.allreduce_async("w", view(v), view(v)).wait(kNoHang);  // negotiated by cache bits
    if (rank == 2) RANK_CHECK(rt.stats().cache_hits >= 1);
    // Rank 1's output has another size: refused there; ranks 0 and 2 hit the cache.
    const std::string m = refusal(rt.allreduce_async("w", view(v), rank == 1 ? view(other) : view(v)));
    RANK_CHECK(contains(m, "allreduce of tensor 'w' refused on rank 1: input has shape [4] but output has shape [5]"));
    std::vector<float> again(4, float(rank));
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    rt.allreduce_async("w", view(again), view(again), sum).wait(kNoHang);
    RANK_CHECK(again[3] == 3.0f);  // 0 + 1 + 2
  });
}

TEST_CASE("Each collective's local refusal on one rank fails every rank", "[runtime][errors][refused]") {
  // One after the other in one job (Catch2 sections do not mix with rank threads).
  run_ranks(3, [](Runtime& rt, int rank) {
    const bool bad = rank == 1;
    std::vector<float> v(6, 1.0f), five(5, 1.0f);
    AllreduceOptions o;
    o.op = bad ? ReduceOp::kAdasum : ReduceOp::kSum;
    std::string m = refusal(rt.reducescatter_async("rs", view(v, TensorShape{3, 2}), o));
    RANK_CHECK(contains(m, "reducescatter of tensor 'rs' refused on rank 1: adasum is defined for allreduce only"));

    const std::vector<int64_t> splits = bad ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{2, 2, 2};
    m = refusal(rt.alltoall_async("a2a", view(v), splits));
    RANK_CHECK(contains(m, "alltoall of tensor 'a2a' refused on rank 1: 2 splits given for 3 ranks"));

    m = refusal(rt.broadcast_async("b", view(v), bad ? view(five) : view(v), 0));
    RANK_CHECK(contains(m, "broadcast of tensor 'b' refused on rank 1: input is float32 [6] but output is float32 [5]"));

    m = refusal(rt.allreduce_async("null", bad ? nullptr : view(v), view(v)));
    RANK_CHECK(contains(m, "allreduce of tensor 'null' refused on rank 1: input is null"));

    std::vector<Handle> hs = rt.grouped_allgather_async(
        {"g.0", "g.1"}, {view(v, TensorShape{3, 2}), view(five, bad ? TensorShape{} : TensorShape{5})});
    for (const Handle& h : hs) {
      m = refusal(h);
      // The group fails with its first member's error: either member names rank 1 and member g.1.
      RANK_CHECK(contains(m, "Grouped allgather") && contains(m, "refused on rank 1"));
      RANK_CHECK(contains(m, "'g.1'") && contains(m, "a scalar cannot be gathered"));
    }
    // Every name works again.
    rt.reducescatter_async("rs", view(v, TensorShape{3, 2}), {}).wait(kNoHang);
    rt.alltoall_async("a2a", view(v), {2, 2, 2}).wait(kNoHang);
    rt.broadcast_async("b", view(v), 0).wait(kNoHang);
    rt.allreduce_async("null", view(v), view(v)).wait(kNoHang);
    for (const Handle& h : rt.grouped_allgather_async({"g.0", "g.1"}, {view(v, TensorShape{3, 2}), view(five)})) {
      h.wait(kNoHang);
    }
  });
}

TEST_CASE("Ranks that refuse for different reasons are each named with theirs", "[runtime][errors][refused]") {
  run_ranks(4, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1.0f), five(5, 1.0f);
    std::shared_ptr<Tensor> in = view(v), out = view(v);
    if (rank == 1 || rank == 3) out = view(five);
    if (rank == 2) in = nullptr;
    const std::string m = refusal(rt.allreduce_async("two.reasons", in, out));
    RANK_CHECK(contains(m, "refused on ranks 1, 3: input has shape [4] but output has shape [5]; on rank 2: input is null"));
  });
}

TEST_CASE("A refusal inside a process set names the global rank", "[runtime][errors][refused][process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({1, 2});
    if (rank == 0) return;
    std::vector<float> v(4, 1.0f);
    OpHooks hooks;
    hooks.process_set = set;
    const std::string m = refusal(rt.allgather_async("in.set", rank == 2 ? view(v, TensorShape{}) : view(v), hooks));
    RANK_CHECK(contains(m, "allgather of tensor 'in.set' in process set 1 (ranks 1, 2) refused on rank 2"));
  });
}

TEST_CASE("An adapter's refusal (refuse_async, refuse_group_async) fails every rank's call", "[runtime][errors][refused]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(2, 1.0f);
    const Handle h = rank == 1 ? rt.refuse_async(Collective::kAllgather, "adapted", "the tensor is sparse")
                               : rt.allgather_async("adapted", view(v));
    RANK_CHECK(contains(refusal(h), "allgather of tensor 'adapted' refused on rank 1: the tensor is sparse"));
    std::vector<Handle> group = rank == 2 ? rt.refuse_group_async(Collective::kAllreduce, {"ga", "gb"}, "no")
                                          : rt.grouped_allreduce_async({"ga", "gb"}, {view(v), view(v)}, {});
    for (const Handle& g : group) RANK_CHECK(contains(refusal(g), "refused on rank 2: no"));
    rt.allgather_async("adapted", view(v)).wait(kNoHang);
    for (const Handle& g : rt.grouped_allreduce_async({"ga", "gb"}, {view(v), view(v)}, {})) g.wait(kNoHang);
  });
}

TEST_CASE("A negative rank passed to add_process_set on one rank is refused, not sent as a malformed request",
          "[runtime][errors][refused][process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    // Rank 1 (a worker: its request travels to rank 0 on the wire) passes -1.
    std::string m;
    try {
      rt.add_process_set(rank == 1 ? std::vector<int>{-1, 0} : std::vector<int>{0, 1});
    } catch (const InvalidArgumentError& e) {
      m = e.what();
    }
    RANK_CHECK(contains(m, "refused on rank 1: add_process_set: rank -1 is outside 0..2"));
    const ProcessSet set = rt.add_process_set({0, 1, 2});
    std::vector<float> v(1, 1.0f);
    OpHooks hooks;
    hooks.process_set = set;
    rt.allreduce_async("after.negative", view(v), view(v), AllreduceOptions{}, hooks).wait(kNoHang);
  });
}

TEST_CASE("A refusal while another rank has joined fails the active ranks; join still completes",
          "[runtime][errors][refused][join]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1.0f), five(5, 1.0f);
    if (rank == 2) {
      rt.join_async().wait(kNoHang);
      return;
    }
    const std::string m = refusal(rt.allreduce_async("while.joined", view(v), rank == 1 ? view(five) : view(v)));
    RANK_CHECK(contains(m, "allreduce of tensor 'while.joined' refused on rank 1"));
    rt.join_async().wait(kNoHang);
  });
}

TEST_CASE("Rank 0 refusing a cached allreduce fails the ranks that sent cache bits", "[runtime][errors][refused]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1.0f), other(5, 1.0f);
    for (int i = 0; i < 3; ++i) rt.allreduce_async("w0", view(v), view(v)).wait(kNoHang);  // cached everywhere
    // Rank 0 (the coordinator: its request never travels) refuses; 1 and 2 send bits.
    const std::string m = refusal(rt.allreduce_async("w0", view(v), rank == 0 ? view(other) : view(v)));
    RANK_CHECK(contains(m, "allreduce of tensor 'w0' refused on rank 0: input has shape [4] but output has shape [5]"));
    std::vector<float> again(4, float(rank + 1));
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (int i = 0; i < 2; ++i) {  // renegotiated in full, then by cache bits again
      again.assign(4, float(rank + 1));
      rt.allreduce_async("w0", view(again), view(again), sum).wait(kNoHang);
      RANK_CHECK(again[0] == 6.0f);  // 1 + 2 + 3
    }
  });
}

TEST_CASE("A negative dimension on one rank is refused, not sent as a request rank 0 cannot decode",
          "[runtime][errors][refused]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(6, 1.0f);
    // Rank 2 (a worker) passes [2, -3]: before, its request failed to decode on
    // rank 0 and stopped the job.
    const TensorShape bad{2, -3}, good{2, 3};
    const std::string m = refusal(rt.allreduce_async("negative.dim", view(v, rank == 2 ? bad : good),
                                                     view(v, rank == 2 ? bad : good)));
    RANK_CHECK(contains(m, "allreduce of tensor 'negative.dim' refused on rank 2: dimension 1 is -3"));
    const std::string a2a = refusal(rt.alltoall_async("negative.a2a", view(v, rank == 1 ? TensorShape{3, -2} : good), {1, 1, 0}));
    RANK_CHECK(contains(a2a, "alltoall of tensor 'negative.a2a' refused on rank 1: dimension 1 is -2"));
    rt.allreduce_async("negative.dim", view(v, good), view(v, good)).wait(kNoHang);
  });
}

TEST_CASE("An unknown reduce op (an integer cast in C++) on one rank is refused on every rank",
          "[runtime][errors][refused]") {
  run_ranks(2, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1.0f);
    AllreduceOptions o;
    if (rank == 1) o.op = static_cast<ReduceOp>(42);
    const std::string m = refusal(rt.allreduce_async("op.cast", view(v), view(v), o));
    RANK_CHECK(contains(m, "allreduce of tensor 'op.cast' refused on rank 1: unknown reduce op 42"));
  });
}
