// Process sets under mpirun at 2, 3 and 4 ranks: even and odd ranks form
// two disjoint sets ({0, 2} and {1, 3} at 4 ranks) that run at the same time;
// every collective inside a set with exact values over several dtypes;
// overlapping sets next to the global one; a set used from outside fails on
// that rank; mismatches fail on every member; registration and removal;
// init() with process sets; arena tensors inside a set.
#include <catch2/catch.hpp>

#include <chrono>

#include "chorus/chorus.h"
#include "typed_values.h"

using namespace chorus;
using chorus::test::load;
using chorus::test::store;

namespace {

constexpr auto kWait = std::chrono::seconds(60);

std::vector<int> ranks_with_parity(int parity) {
  std::vector<int> out;
  for (int r = parity; r < chorus::size(); r += 2) out.push_back(r);
  return out;
}

OpHooks in(const ProcessSet& set) {
  OpHooks hooks;
  hooks.process_set = set;
  return hooks;
}

std::shared_ptr<Tensor> typed(std::vector<char>& bytes, DataType dt, TensorShape shape) {
  bytes.resize(static_cast<size_t>(shape.num_elements() * dtype_size(dt)) + 1);
  return std::make_shared<HostTensorView>(bytes.data(), dt, shape);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected a chorus::Error");
  return "";
}

// Registers the even and the odd ranks (every rank, same order).
struct EvenOdd {
  ProcessSet even = add_process_set(ranks_with_parity(0));
  ProcessSet odd = chorus::size() > 1 ? add_process_set(ranks_with_parity(1)) : ProcessSet();
  const ProcessSet& mine() const { return chorus::rank() % 2 == 0 ? even : odd; }
  ~EvenOdd() {
    remove_process_set(even);
    if (!odd.is_global()) remove_process_set(odd);
  }
};

}  // namespace

TEST_CASE("ProcessSet size(), rank() and included(), as Horovod's", "[mpi][process_set]") {
  const int rank = chorus::rank(), n = chorus::size();
  EvenOdd sets;
  const ProcessSet global;
  REQUIRE(global.size() == n);
  REQUIRE(global.rank() == rank);
  REQUIRE(global.included());
  REQUIRE(sets.even.size() == (n + 1) / 2);
  REQUIRE(sets.even.rank() == (rank % 2 == 0 ? rank / 2 : -1));
  REQUIRE(sets.even.included() == (rank % 2 == 0));
  if (n > 1) {
    REQUIRE(sets.odd.size() == n / 2);
    REQUIRE(sets.odd.rank() == (rank % 2 == 1 ? rank / 2 : -1));
    REQUIRE(sets.odd.included() == (rank % 2 == 1));
  }
}

TEST_CASE("Disjoint process sets run at the same time, neither waiting for the other", "[mpi][process_set]") {
  const int rank = chorus::rank();
  EvenOdd sets;
  const ProcessSet& mine = sets.mine();
  const std::vector<int>& members = mine.ranks();
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  // The odd ranks start their set's work only after the even set finished
  // (the global allreduce below needs the even ranks to have got there).
  auto signal = [&] {
    std::vector<float> s(1, 1.0f);
    auto t = std::make_shared<HostTensorView>(s.data(), DataType::kFloat32, TensorShape{1});
    allreduce_async("even.done", t, t, sum).wait(kWait);
  };
  if (rank % 2 == 1) signal();
  std::vector<Handle> handles;
  std::vector<std::vector<int32_t>> bufs(30, std::vector<int32_t>(100));
  for (int t = 0; t < 30; ++t) {
    std::fill(bufs[t].begin(), bufs[t].end(), rank * 10 + t);
    auto v = std::make_shared<HostTensorView>(bufs[t].data(), DataType::kInt32, TensorShape{100});
    handles.push_back(runtime().allreduce_async("set.storm." + std::to_string(t), v, v, sum, in(mine)));
  }
  for (auto& h : handles) h.wait(kWait);
  for (int t = 0; t < 30; ++t) {
    int32_t expected = 0;
    for (int m : members) expected += m * 10 + t;
    REQUIRE(bufs[t][99] == expected);
  }
  if (rank % 2 == 0) signal();
}

TEST_CASE("Every collective inside a process set, several dtypes, exact values", "[mpi][process_set]") {
  const int rank = chorus::rank();
  EvenOdd sets;
  const ProcessSet& set = sets.mine();
  const std::vector<int>& members = set.ranks().empty() ? std::vector<int>{0} : set.ranks();
  const int n = static_cast<int>(members.size()), me = set.rank_of(rank);
  for (DataType dt : {DataType::kInt32, DataType::kFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const std::string tag = dtype_name(dt);
    INFO(tag);
    // Allreduce (sum) and average of small integers: exact in every dtype.
    std::vector<char> a;
    auto ta = typed(a, dt, TensorShape{7});
    for (int i = 0; i < 7; ++i) store(a.data(), i, dt, rank + i);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    runtime().allreduce_async("ps.sum." + tag, ta, ta, sum, in(set)).wait(kWait);
    double rank_sum = 0;
    for (int m : members) rank_sum += m;
    for (int i = 0; i < 7; ++i) REQUIRE(load(a.data(), i, dt) == rank_sum + n * i);
    std::vector<char> avg;
    auto tv = typed(avg, dt, TensorShape{3});
    for (int i = 0; i < 3; ++i) store(avg.data(), i, dt, 4.0 * n);
    runtime().allreduce_async("ps.avg." + tag, tv, tv, {}, in(set)).wait(kWait);
    REQUIRE(load(avg.data(), 2, dt) == 4.0 * n);  // the mean divides by the set's size
    // Broadcast from the set's highest global rank.
    std::vector<char> b;
    auto tb = typed(b, dt, TensorShape{5});
    for (int i = 0; i < 5; ++i) store(b.data(), i, dt, rank == members.back() ? 3 + i : -1);
    runtime().broadcast_async("ps.bcast." + tag, tb, members.back(), in(set)).wait(kWait);
    for (int i = 0; i < 5; ++i) REQUIRE(load(b.data(), i, dt) == 3 + i);
    // Allgather: member k contributes k + 1 rows of 2, in set order.
    std::vector<char> g;
    auto tg = typed(g, dt, TensorShape{me + 1, 2});
    for (int i = 0; i < (me + 1) * 2; ++i) store(g.data(), i, dt, rank * 4 + i);
    Handle hg = runtime().allgather_async("ps.gather." + tag, tg, in(set));
    hg.wait(kWait);
    REQUIRE(hg.output()->shape() == TensorShape({int64_t(n * (n + 1) / 2), 2}));
    int64_t at = 0;
    for (int k = 0; k < n; ++k) {
      for (int i = 0; i < (k + 1) * 2; ++i) REQUIRE(load(hg.output()->data(), at++, dt) == members[k] * 4 + i);
    }
    // Reducescatter: 2n + 1 rows; member k keeps its block.
    std::vector<char> rs;
    const int64_t rows = 2 * n + 1;
    auto tr = typed(rs, dt, TensorShape{rows});
    for (int64_t i = 0; i < rows; ++i) store(rs.data(), i, dt, double(i));
    Handle hr = runtime().reducescatter_async("ps.rs." + tag, tr, sum, in(set));
    hr.wait(kWait);
    const int64_t mine_rows = rows / n + (me < rows % n ? 1 : 0);
    const int64_t first = me * (rows / n) + std::min<int64_t>(me, rows % n);
    REQUIRE(hr.output()->shape() == TensorShape({mine_rows}));
    for (int64_t i = 0; i < mine_rows; ++i) REQUIRE(load(hr.output()->data(), i, dt) == double(n * (first + i)));
    // Alltoall: one row to every member.
    std::vector<char> x;
    auto tx = typed(x, dt, TensorShape{n});
    for (int k = 0; k < n; ++k) store(x.data(), k, dt, rank * 8 + k);
    Handle hx = runtime().alltoall_async("ps.a2a." + tag, tx, {}, in(set));
    hx.wait(kWait);
    REQUIRE(hx.received_splits() == std::vector<int64_t>(static_cast<size_t>(n), 1));
    for (int k = 0; k < n; ++k) REQUIRE(load(hx.output()->data(), k, dt) == members[k] * 8 + me);
  }
  barrier(set);
  // Grouped allreduce in the set.
  std::vector<float> g1(4, 1.0f), g2(2, float(rank));
  auto t1 = std::make_shared<HostTensorView>(g1.data(), DataType::kFloat32, TensorShape{4});
  auto t2 = std::make_shared<HostTensorView>(g2.data(), DataType::kFloat32, TensorShape{2});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  for (Handle& h : runtime().grouped_allreduce_async({"ps.g1", "ps.g2"}, {t1, t2}, {}, sum, set)) h.wait(kWait);
  double rank_sum = 0;
  for (int m : members) rank_sum += m;
  REQUIRE(g1[3] == float(n));
  REQUIRE(g2[1] == float(rank_sum));
}

TEST_CASE("Overlapping process sets run next to the global set", "[mpi][process_set]") {
  const int rank = chorus::rank(), size = chorus::size();
  if (size < 3) return;
  std::vector<int> low, high;
  for (int r = 0; r < size - 1; ++r) low.push_back(r);
  for (int r = 1; r < size; ++r) high.push_back(r);
  const ProcessSet a = add_process_set(low), b = add_process_set(high);
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  std::vector<std::vector<int64_t>> bufs;
  bufs.reserve(60);
  std::vector<Handle> handles;
  std::vector<int64_t> expected;
  for (int t = 0; t < 20; ++t) {
    for (const ProcessSet& set : {ProcessSet(), a, b}) {
      if (set.rank_of(rank) < 0) continue;
      bufs.emplace_back(16, rank + t);
      auto v = std::make_shared<HostTensorView>(bufs.back().data(), DataType::kInt64, TensorShape{16});
      handles.push_back(runtime().allreduce_async("overlap." + std::to_string(t), v, v, sum, in(set)));
      int64_t e = 0;
      for (int r = 0; r < size; ++r) e += set.rank_of(r) >= 0 ? r + t : 0;
      expected.push_back(e);
    }
  }
  for (auto& h : handles) h.wait(kWait);
  for (size_t i = 0; i < bufs.size(); ++i) REQUIRE(bufs[i][15] == expected[i]);
  remove_process_set(a);
  remove_process_set(b);
}

TEST_CASE("A process set used from outside fails on that rank, naming the set and the rank", "[mpi][process_set]") {
  const int rank = chorus::rank();
  if (chorus::size() < 2) return;
  const ProcessSet set = add_process_set({0});
  std::vector<float> v(3, 1.0f);
  auto t = std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{3});
  if (rank != 0) {
    const std::string m = error_of([&] { runtime().allreduce_async("ps.outside", t, t, {}, in(set)); });
    REQUIRE_THAT(m, Catch::Contains("allreduce of tensor 'ps.outside'") &&
                        Catch::Contains("rank " + std::to_string(rank) + " is not a member of process set " +
                                        std::to_string(set.id()) + " (ranks 0)"));
    REQUIRE_THROWS_AS(runtime().allgather_async("ps.outside.g", t, in(set)), InvalidArgumentError);
    REQUIRE_THROWS_AS(barrier(set), InvalidArgumentError);
  } else {
    runtime().allreduce_async("ps.alone", t, t, {}, in(set)).wait(kWait);  // a set of one
    REQUIRE(v[0] == 1.0f);
  }
  remove_process_set(set);
}

TEST_CASE("A mismatch inside a process set fails on every member, naming global ranks", "[mpi][process_set]") {
  const int rank = chorus::rank(), size = chorus::size();
  if (size < 2) return;
  const std::vector<int> members = {size - 2, size - 1};
  const ProcessSet set = add_process_set(members);
  if (set.rank_of(rank) >= 0) {
    std::vector<float> v(rank == size - 1 ? 4 : 3, 1.0f);
    auto t = std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{int64_t(v.size())});
    const std::string m = error_of([&] { runtime().allreduce_async("ps.bad", t, t, {}, in(set)).wait(kWait); });
    REQUIRE_THAT(m, Catch::Contains("Mismatched allreduce of tensor 'ps.bad' in process set") &&
                        Catch::Contains("[3] on rank " + std::to_string(size - 2) + "; [4] on rank " +
                                        std::to_string(size - 1)));
  }
  remove_process_set(set);
}

TEST_CASE("Removing a process set ends its pending operations; registrations that disagree fail everywhere",
          "[mpi][process_set]") {
  const int rank = chorus::rank(), size = chorus::size();
  if (size < 2) return;
  const ProcessSet set = add_process_set({0, 1});
  REQUIRE(runtime().process_set(set.id()).ranks() == std::vector<int>({0, 1}));
  std::vector<float> v(2, 1.0f);
  auto t = std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{2});
  Handle pending;
  if (rank == 0) pending = runtime().allreduce_async("ps.never", t, t, {}, in(set));  // rank 1 never submits it
  barrier();  // enqueued before the removal
  if (rank == 1) remove_process_set(set);
  if (rank == 0) {
    const std::string m = error_of([&] { pending.wait(kWait); });
    REQUIRE_THAT(m, Catch::Contains("rank 1 removed process set " + std::to_string(set.id())));
  }
  barrier();
  if (rank != 1) remove_process_set(set);
  REQUIRE_THROWS_WITH(barrier(set), Catch::Contains("is not registered"));

  const std::string m = error_of([&] { add_process_set(rank == 0 ? std::vector<int>{0} : std::vector<int>{1}); });
  REQUIRE_THAT(m, Catch::Contains("member ranks differs: [0] on rank 0; [1] on rank"));
}

TEST_CASE("init() with process sets registers them in order", "[mpi][process_set]") {
  const int size = chorus::size();
  const std::vector<std::vector<int>> wanted = {{0}, ranks_with_parity(0)};
  shutdown();
  const std::vector<ProcessSet> sets = init(RuntimeOptions::from_environment(), wanted);
  REQUIRE(sets.size() == 2);
  REQUIRE(sets[0].id() == 1);
  REQUIRE(sets[1].ranks() == wanted[1]);
  REQUIRE(runtime().process_sets().size() == 2);
  if (chorus::rank() % 2 == 0) {
    std::vector<int32_t> v(2, 1);
    auto t = std::make_shared<HostTensorView>(v.data(), DataType::kInt32, TensorShape{2});
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    runtime().allreduce_async("ps.init", t, t, sum, in(sets[1])).wait(kWait);
    REQUIRE(v[0] == (size + 1) / 2);
  }
  for (const ProcessSet& s : sets) remove_process_set(s);
}

TEST_CASE("Tensors from allocate_shared_host inside a process set are staged, and right", "[mpi][process_set][arena]") {
  // Sets read no arenas in place (docs/api.md): the same tensors that a
  // global call reduces where they lie go through the set's staging.
  const int rank = chorus::rank();
  EvenOdd sets;
  const ProcessSet& set = sets.mine();
  const std::vector<int>& members = set.ranks().empty() ? std::vector<int>{0} : set.ranks();
  const int64_t count = (1 << 20) + 7;  // several staging blocks
  std::shared_ptr<void> memory = runtime().allocate_shared_host(count * 4);
  auto* x = static_cast<float*>(memory.get());
  for (int64_t i = 0; i < count; ++i) x[i] = float(rank + 1) * float(i % 1000);
  auto t = std::make_shared<HostTensorView>(x, DataType::kFloat32, TensorShape{count});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  const int64_t zero_copy_before = runtime().stats().shm_zero_copy_ops;
  runtime().allreduce_async("ps.arena", t, t, sum, in(set)).wait(kWait);
  REQUIRE(runtime().stats().shm_zero_copy_ops == zero_copy_before);
  float members_sum = 0;
  for (int m : members) members_sum += float(m + 1);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) wrong += x[i] != members_sum * float(i % 1000);
  REQUIRE(wrong == 0);
}
