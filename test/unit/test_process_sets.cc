// Process sets on in-process ranks: registration, collectives restricted to
// the members, disjoint sets independent of each other, overlapping sets
// next to the global one, clear errors for non-members and mismatches, and
// removal.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>

#include "chorus/error.h"
#include "chorus/runtime.h"
#include "loopback_job.h"

using namespace chorus;
using chorus::test::run_ranks;

namespace {

std::shared_ptr<Tensor> view(std::vector<float>& v) {
  return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{static_cast<int64_t>(v.size())});
}

OpHooks in(const ProcessSet& set) {
  OpHooks hooks;
  hooks.process_set = set;
  return hooks;
}

AllreduceOptions sum() {
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  return o;
}

// Runs `f` and returns the message of the chorus::Error it must throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  throw std::runtime_error("expected a chorus::Error");
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

}  // namespace

TEST_CASE("Disjoint process sets allreduce at the same time, neither waiting for the other", "[process_set]") {
  std::atomic<int> set_a_done{0};
  run_ranks(4, [&](Runtime& rt, int rank) {
    const ProcessSet a = rt.add_process_set({2, 0});  // any order: kept ascending
    const ProcessSet b = rt.add_process_set({1, 3});
    RANK_CHECK(a.id() == 1 && b.id() == 2);
    RANK_CHECK(a.ranks() == std::vector<int>({0, 2}));
    const ProcessSet& mine = rank % 2 == 0 ? a : b;
    if (rank % 2 == 1) {
      // Set b starts only once set a finished: a never needed b's ranks.
      while (set_a_done.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int round = 0; round < 20; ++round) {
      std::vector<float> v(33, float(rank + round));
      rt.allreduce_async("x." + std::to_string(round), view(v), view(v), sum(), in(mine)).wait(std::chrono::seconds(30));
      const float expected = rank % 2 == 0 ? float(0 + 2 + 2 * round) : float(1 + 3 + 2 * round);
      RANK_CHECK(v[32] == expected);
    }
    if (rank % 2 == 0) ++set_a_done;
    std::vector<float> g(5, 1.0f);
    rt.allreduce_async("global", view(g), view(g), sum()).wait(std::chrono::seconds(30));
    RANK_CHECK(g[0] == 4.0f);
  });
}

TEST_CASE("Overlapping process sets and the global set run side by side", "[process_set]") {
  run_ranks(4, [](Runtime& rt, int rank) {
    const ProcessSet low = rt.add_process_set({0, 1, 2});
    const ProcessSet high = rt.add_process_set({1, 2, 3});
    std::vector<Handle> handles;
    std::vector<std::vector<float>> bufs;
    bufs.reserve(60);
    for (int t = 0; t < 20; ++t) {
      for (int which = 0; which < 3; ++which) {
        const ProcessSet set = which == 0 ? ProcessSet() : which == 1 ? low : high;
        if (set.rank_of(rank) < 0) continue;
        bufs.emplace_back(8, float(rank));
        handles.push_back(rt.allreduce_async("t" + std::to_string(t), view(bufs.back()), view(bufs.back()), sum(),
                                             in(set)));
      }
    }
    for (auto& h : handles) h.wait(std::chrono::seconds(30));
    size_t at = 0;
    for (int t = 0; t < 20; ++t) {
      for (int which = 0; which < 3; ++which) {
        const float expected = which == 0 ? 6.0f : which == 1 ? 3.0f : 6.0f;
        if (which == 1 && rank == 3) continue;
        if (which == 2 && rank == 0) continue;
        RANK_CHECK(bufs[at++][7] == expected);
      }
    }
  });
}

TEST_CASE("Every collective inside a process set, with the members' global ranks", "[process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({0, 2});
    if (rank == 1) {
      rt.barrier_async().wait(std::chrono::seconds(30));
      return;
    }
    const int me = set.rank_of(rank);  // 0 or 1
    // Average divides by the set's size.
    std::vector<float> v(4, float(rank));
    rt.allreduce_async("avg", view(v), view(v), {}, in(set)).wait();
    RANK_CHECK(v[3] == 1.0f);
    // Grouped.
    std::vector<float> g1(3, 1.0f), g2(2, float(rank));
    for (Handle& h : rt.grouped_allreduce_async({"g1", "g2"}, {view(g1), view(g2)}, {}, sum(), set)) h.wait();
    rt.barrier_async(set).wait();
    // Broadcast from global rank 2 (set rank 1).
    std::vector<float> b(6, rank == 2 ? 7.5f : 0.0f);
    rt.broadcast_async("b", view(b), 2, in(set)).wait();
    RANK_CHECK(b[5] == 7.5f);
    RANK_CHECK(g1[0] == 2.0f && g2[1] == 2.0f);
    // Allgather in set order: rank 0's 1 row, then rank 2's 2 rows.
    std::vector<int32_t> rows(static_cast<size_t>(me + 1), rank);
    Handle h = rt.allgather_async("ag", std::make_shared<HostTensorView>(rows.data(), DataType::kInt32, TensorShape{me + 1}),
                                  in(set));
    h.wait();
    const int32_t* out = static_cast<const int32_t*>(h.output()->data());
    RANK_CHECK(h.output()->shape() == TensorShape({3}));
    RANK_CHECK(out[0] == 0 && out[1] == 2 && out[2] == 2);
    // Reducescatter: 3 rows over 2 members -> 2 rows, 1 row.
    std::vector<int64_t> rs = {1, 2, 3};
    Handle r = rt.reducescatter_async("rs", std::make_shared<HostTensorView>(rs.data(), DataType::kInt64, TensorShape{3}),
                                      sum(), in(set));
    r.wait();
    RANK_CHECK(r.output()->shape() == TensorShape({me == 0 ? 2 : 1}));
    RANK_CHECK(static_cast<const int64_t*>(r.output()->data())[0] == (me == 0 ? 2 : 6));
    // Alltoall: one split per member.
    std::vector<double> a = {10.0 * rank, 10.0 * rank + 1};
    Handle x = rt.alltoall_async("a2a", std::make_shared<HostTensorView>(a.data(), DataType::kFloat64, TensorShape{2}),
                                 {}, in(set));
    x.wait();
    RANK_CHECK(x.received_splits() == std::vector<int64_t>({1, 1}));
    const double* got = static_cast<const double*>(x.output()->data());
    RANK_CHECK(got[0] == 0.0 + me && got[1] == 20.0 + me);
    rt.barrier_async().wait(std::chrono::seconds(30));
  });
}

TEST_CASE("A process set used from outside fails on that rank at once, naming the set and the rank", "[process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({0, 2});
    if (rank == 1) {
      std::vector<float> v(2, 1.0f);
      const std::string m = error_of([&] { rt.allreduce_async("outside", view(v), view(v), {}, in(set)); });
      RANK_CHECK(contains(m, "allreduce of tensor 'outside'"));
      RANK_CHECK(contains(m, "rank 1 is not a member of process set 1 (ranks 0, 2)"));
      RANK_CHECK(contains(error_of([&] { rt.barrier_async(set); }), "rank 1 is not a member"));
    } else {
      std::vector<float> v(2, 1.0f);
      // Negotiated (the other member might have named a valid root), so it
      // fails at the wait, on both members.
      const std::string m = error_of([&] { rt.broadcast_async("root.outside", view(v), 1, in(set)).wait(); });
      RANK_CHECK(contains(m, "root rank 1 is not a member of process set 1 (ranks 0, 2)"));
      const std::string one = error_of([&] {
        rt.broadcast_async("root.outside.one", view(v), rank == 0 ? 2 : 1, in(set)).wait();
      });
      RANK_CHECK(contains(one, "root rank differs"));
      RANK_CHECK(contains(one, "1 (not a member) on rank 2"));
      const std::string splits = error_of([&] {
        rt.alltoall_async("few.splits", view(v), {1, 1, 0}, in(set)).wait();
      });
      RANK_CHECK(contains(splits, "3 splits given for 2 ranks of process set 1"));
    }
    const std::string unknown = error_of([&] { rt.barrier_async(ProcessSet(9, {0})); });
    RANK_CHECK(contains(unknown, "process set 9 is not registered"));
  });
}

TEST_CASE("A mismatch inside a process set fails on every member, naming global ranks", "[process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({1, 2});
    if (rank == 0) return;
    std::vector<float> v(rank == 1 ? 3 : 4, 1.0f);
    const std::string m = error_of([&] {
      rt.allreduce_async("bad", view(v), view(v), {}, in(set)).wait(std::chrono::seconds(30));
    });
    RANK_CHECK(contains(m, "Mismatched allreduce of tensor 'bad' in process set 1 (ranks 1, 2)"));
    RANK_CHECK(contains(m, "[3] on rank 1; [4] on rank 2"));
  });
}

TEST_CASE("Registrations that disagree fail on every rank; so do bad ranks on one rank, naming it", "[process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const std::string m = error_of([&] { rt.add_process_set(rank == 0 ? std::vector<int>{0, 1} : std::vector<int>{0, 2}); });
    RANK_CHECK(contains(m, "member ranks differs: [0, 1] on rank 0; [0, 2] on ranks 1, 2"));
    // Bad ranks on one rank: the others, which passed good ones, fail too.
    const std::vector<int> good = {0, 1};
    RANK_CHECK(contains(error_of([&] { rt.add_process_set(rank == 1 ? std::vector<int>{0, 3} : good); }),
                        "refused on rank 1: add_process_set: rank 3 is outside 0..2"));
    RANK_CHECK(contains(error_of([&] { rt.add_process_set(rank == 2 ? std::vector<int>{1, 1} : good); }),
                        "refused on rank 2: add_process_set: rank 1 is given twice"));
    RANK_CHECK(contains(error_of([&] { rt.add_process_set(rank == 0 ? std::vector<int>{} : good); }),
                        "refused on rank 0: add_process_set: a process set needs at least one rank"));
    // Each failed registration used its id (1 to 4) everywhere; the next one works.
    const ProcessSet set = rt.add_process_set({0, 1, 2});
    RANK_CHECK(set.id() == 5);
    std::vector<float> v(1, 1.0f);
    rt.allreduce_async("after", view(v), view(v), sum(), in(set)).wait();
    RANK_CHECK(v[0] == 3.0f);
  });
}

TEST_CASE("Removing a process set ends its pending operations on every member", "[process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({0, 2});
    RANK_CHECK(rt.process_sets().size() == 1);
    RANK_CHECK(rt.process_set(set.id()).ranks() == set.ranks());
    // Rank 2 never submits "never": removing the set on rank 2 ends it on rank 0.
    std::vector<float> never(2, 1.0f);
    Handle pending;
    if (rank == 0) pending = rt.allreduce_async("never", view(never), view(never), {}, in(set));
    rt.barrier_async().wait(std::chrono::seconds(30));  // enqueued before the removal
    if (rank == 2) rt.remove_process_set(set);
    if (rank == 0) {
      const std::string m = error_of([&] { pending.wait(std::chrono::seconds(30)); });
      RANK_CHECK(contains(m, "rank 2 removed process set 1 (ranks 0, 2)"));
    }
    rt.barrier_async().wait(std::chrono::seconds(30));
    if (rank != 2) rt.remove_process_set(set);
    RANK_CHECK(rt.process_sets().empty());
    std::vector<float> v(2, 1.0f);
    RANK_CHECK(contains(error_of([&] { rt.allreduce_async("gone", view(v), view(v), {}, in(set)); }),
                        "process set 1 is not registered"));
    RANK_CHECK(contains(error_of([&] { rt.remove_process_set(ProcessSet()); }), "cannot be removed"));
    // A set whose id now names other ranks (one kept across an elastic reset) is refused.
    const ProcessSet now = rt.add_process_set({0, 1});
    const ProcessSet stale(now.id(), {0, 2});
    RANK_CHECK(contains(error_of([&] { rt.allreduce_async("stale", view(v), view(v), {}, in(stale)); }),
                        "this process set's ranks differ from"));
    rt.remove_process_set(now);
    // The global set is untouched.
    rt.allreduce_async("still", view(v), view(v), sum()).wait();
    RANK_CHECK(v[0] == 3.0f);
  });
}
