// Tensor ops on torch::Tensor under mpirun: values against exact
// expectations, non-contiguous inputs, dtypes, names, errors.
#include "torch_test_util.h"

using namespace chorus;

namespace {

torch::Tensor rank_filled(std::vector<int64_t> shape, torch::Dtype dtype, int offset = 1) {
  return torch::full(shape, chorus::rank() + offset, torch::TensorOptions().dtype(dtype));
}

double sum_of_ranks(int offset = 1) {
  const int n = chorus::size();
  return n * (n - 1) / 2.0 + offset * n;
}

}  // namespace

TEST_CASE("torch allreduce: ops and dtypes", "[torch][ops]") {
  const int n = chorus::size();
  const std::vector<torch::Dtype> dtypes = {torch::kUInt8, torch::kInt8, torch::kInt16, torch::kInt32, torch::kInt64, torch::kFloat16,
                                            torch::kBFloat16, torch::kFloat32, torch::kFloat64};
  for (torch::Dtype dtype : dtypes) {
    const std::string d = c10::toString(dtype);
    torch::Tensor t = rank_filled({3, 5}, dtype);
    AllreduceOptions sum;
    sum.op = Sum;
    torch::Tensor s = allreduce(t, "ops.sum." + d, sum);
    CHECK(s.scalar_type() == dtype);
    CHECK(s.sizes() == t.sizes());
    CHECK(s.to(torch::kFloat64).eq(sum_of_ranks()).all().item<bool>());
    CHECK(t.eq(chorus::rank() + 1).all().item<bool>());  // out of place leaves the input alone
    AllreduceOptions mn, mx;
    mn.op = Min;
    mx.op = Max;
    CHECK(allreduce(t, "ops.min." + d, mn).to(torch::kFloat64).eq(1).all().item<bool>());
    CHECK(allreduce(t, "ops.max." + d, mx).to(torch::kFloat64).eq(n).all().item<bool>());
  }
  torch::Tensor avg = allreduce(rank_filled({7}, torch::kFloat32), "ops.avg");
  CHECK(avg.eq(float(sum_of_ranks() / n)).all().item<bool>());
  torch::Tensor flags = torch::full({4}, chorus::rank() == 0, torch::kBool);
  AllreduceOptions mx;
  mx.op = Max;
  CHECK(allreduce(flags, "ops.bool.max", mx).all().item<bool>());
}

TEST_CASE("torch allreduce in place, non-contiguous, async", "[torch][ops]") {
  torch::Tensor base = rank_filled({4, 6}, torch::kFloat32);
  torch::Tensor column = base.t();  // non-contiguous view
  REQUIRE_FALSE(column.is_contiguous());
  AllreduceOptions sum;
  sum.op = Sum;
  torch::Tensor out = allreduce_(column, "ops.inplace.noncontig", sum);
  CHECK(out.is_same(column));
  CHECK(base.eq(float(sum_of_ranks())).all().item<bool>());  // written through the view

  torch::Tensor strided = rank_filled({10}, torch::kFloat64).slice(0, 0, 10, 3);
  TensorHandle h = allreduce_async(strided, "ops.async.strided", sum);
  torch::Tensor r = synchronize(h);
  CHECK(poll(h));
  CHECK(r.numel() == 4);
  CHECK(r.eq(sum_of_ranks()).all().item<bool>());
}

TEST_CASE("torch grouped allreduce and unnamed ops", "[torch][ops]") {
  std::vector<torch::Tensor> ts = {rank_filled({2}, torch::kFloat32), rank_filled({3, 3}, torch::kInt64),
                                   rank_filled({1}, torch::kFloat64)};
  AllreduceOptions sum;
  sum.op = Sum;
  auto out = grouped_allreduce(ts, "ops.group", sum);
  REQUIRE(out.size() == 3);
  for (const auto& t : out) CHECK(t.to(torch::kFloat64).eq(sum_of_ranks()).all().item<bool>());
  for (const auto& t : ts) CHECK(t.eq(chorus::rank() + 1).all().item<bool>());  // out of place
  // In place (Horovod's grouped_allreduce_), a non-contiguous member too.
  torch::Tensor wide = rank_filled({3, 4}, torch::kFloat32);
  std::vector<torch::Tensor> mine = {rank_filled({2}, torch::kInt16), wide.t(), rank_filled({5}, torch::kFloat64)};
  const std::vector<torch::Tensor> reduced = grouped_allreduce_(mine, "ops.group.inplace", sum);
  REQUIRE(reduced.size() == 3);
  for (size_t i = 0; i < mine.size(); ++i) {
    CHECK(reduced[i].is_same(mine[i]));
    CHECK(mine[i].to(torch::kFloat64).eq(sum_of_ranks()).all().item<bool>());
  }
  CHECK(wide.eq(float(sum_of_ranks())).all().item<bool>());  // through the transposed view
  // Unnamed calls get the same names on every rank when made in the same order.
  for (int i = 0; i < 3; ++i) CHECK(allreduce(rank_filled({5}, torch::kFloat32), "", sum).eq(float(sum_of_ranks())).all().item<bool>());
}

TEST_CASE("torch allgather, broadcast, alltoall, reducescatter", "[torch][ops]") {
  const int r = chorus::rank(), n = chorus::size();
  // allgather: rank r contributes r+1 rows of [r, r, r].
  torch::Tensor mine = torch::full({r + 1, 3}, r, torch::kInt32);
  torch::Tensor all = allgather(mine, "ops.allgather");
  REQUIRE(all.size(0) == n * (n + 1) / 2);
  int64_t row = 0;
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i <= k; ++i, ++row) CHECK(all[row].eq(k).all().item<bool>());
  }
  // broadcast from every root, out of place and in place (non-contiguous).
  for (int root = 0; root < n; ++root) {
    torch::Tensor t = rank_filled({2, 3}, torch::kFloat32, 10);
    torch::Tensor b = broadcast(t, root, "ops.bcast." + std::to_string(root));
    CHECK(b.eq(root + 10).all().item<bool>());
    CHECK(t.eq(r + 10).all().item<bool>());
    torch::Tensor view = t.t();
    broadcast_(view, root, "ops.bcast_." + std::to_string(root));
    CHECK(t.eq(root + 10).all().item<bool>());
  }
  // alltoall: rank r sends j+1 rows of value 100r+j to rank j.
  std::vector<int64_t> splits;
  std::vector<torch::Tensor> blocks;
  for (int j = 0; j < n; ++j) {
    splits.push_back(j + 1);
    blocks.push_back(torch::full({j + 1, 2}, 100 * r + j, torch::kInt64));
  }
  AlltoallResult a = alltoall(torch::cat(blocks), splits, "ops.alltoall");
  REQUIRE(a.received_splits == std::vector<int64_t>(static_cast<size_t>(n), r + 1));
  for (int src = 0; src < n; ++src) {
    CHECK(a.output.slice(0, src * (r + 1), (src + 1) * (r + 1)).eq(100 * src + r).all().item<bool>());
  }
  // reducescatter: 2n+1 rows; the first rank gets one row more.
  torch::Tensor rows = torch::arange(0, 2 * n + 1, torch::kFloat32).unsqueeze(1).repeat({1, 2}) + r;
  AllreduceOptions sum;
  sum.op = Sum;
  torch::Tensor part = reducescatter(rows, "ops.reducescatter", sum);
  const int64_t mine_rows = 2 + (r == 0 ? 1 : 0), first = 2 * r + (r > 0 ? 1 : 0);
  REQUIRE(part.size(0) == mine_rows);
  for (int64_t i = 0; i < mine_rows; ++i) {
    CHECK(part[i][0].item<float>() == float(n * (first + i) + n * (n - 1) / 2));
  }
}

TEST_CASE("torch ops: errors name the tensor", "[torch][ops][errors]") {
  torch::Tensor halves = torch::ones({3}, torch::kComplexHalf);
  REQUIRE_THROWS_AS(allreduce(halves, "ops.err.chalf"), InvalidArgumentError);
  REQUIRE_THROWS_WITH(allreduce(halves, "ops.err.chalf"), Catch::Contains("ops.err.chalf") && Catch::Contains("ComplexHalf"));
  REQUIRE_THROWS_WITH(allreduce(torch::ones({2}, torch::kComplexFloat), "ops.err.complex"),
                      Catch::Contains("ComplexFloat"));
  REQUIRE_THROWS_WITH(allreduce(torch::Tensor(), "ops.err.undefined"), Catch::Contains("undefined"));
  // A shape that differs on the last rank: the core's error on every rank.
  const int odd = chorus::size() - 1;
  torch::Tensor t = torch::ones({chorus::rank() == odd ? 5 : 4});
  try {
    allreduce(t, "ops.err.shape");
    FAIL("expected an error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ops.err.shape") && Catch::Contains("rank " + std::to_string(odd)));
  }
}

TEST_CASE("torch ops: bad input on one rank fails every rank, naming it; the name works again", "[torch][ops][errors]") {
  const int n = chorus::size(), odd = n - 1;
  const std::string refused_on = "refused on rank " + std::to_string(odd) + ": ";
  // A 0-dim tensor on the last rank, one row elsewhere: the core refuses it there.
  torch::Tensor scalar = torch::full({}, float(chorus::rank()));
  torch::Tensor row = torch::full({1, 3}, float(chorus::rank()));
  try {
    allgather(chorus::rank() == odd ? scalar : row, "ops.refused.gather");
    FAIL("expected an error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("allgather of tensor 'ops.refused.gather' " + refused_on) &&
                             Catch::Contains("a scalar cannot be gathered"));
  }
  torch::Tensor gathered = allgather(row, "ops.refused.gather");
  CHECK(gathered.size(0) == n);
  CHECK(gathered[odd][0].item<float>() == float(odd));
  // An undefined tensor on the last rank: the adapter refuses it there.
  try {
    allreduce(chorus::rank() == odd ? torch::Tensor() : row, "ops.refused.undefined");
    FAIL("expected an error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("allreduce of tensor 'ops.refused.undefined' " + refused_on) &&
                             Catch::Contains("the tensor is undefined"));
  }
  // A grouped allreduce with a complex member on the last rank.
  std::vector<torch::Tensor> members = {row, chorus::rank() == odd ? torch::ones({2}, torch::kComplexFloat) : torch::ones({2})};
  try {
    grouped_allreduce(members, "ops.refused.group");
    FAIL("expected an error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains(refused_on) && Catch::Contains("ComplexFloat"));
  }
  CHECK(grouped_allreduce({row, torch::ones({2})}, "ops.refused.group").size() == 2);
}

TEST_CASE("Compression round trips", "[torch][compression]") {
  torch::manual_seed(3);
  torch::Tensor x = torch::randn({1000}, torch::kFloat32);
  for (const auto& [c, tolerance] : {std::pair{Compression::fp16(), 1e-3}, std::pair{Compression::bf16(), 8e-3}}) {
    torch::Dtype original;
    torch::Tensor wire = c->compress(x, &original);
    CHECK(wire.element_size() == 2);
    torch::Tensor back = c->decompress(wire, original);
    CHECK(back.scalar_type() == torch::kFloat32);
    // Relative error of a 16-bit float: 2^-11 (fp16), 2^-8 (bf16).
    CHECK(((back - x).abs() / x.abs().clamp_min(1e-3)).max().item<double>() < tolerance);
    torch::Tensor ints = torch::arange(10, torch::kInt64);
    CHECK(c->compress(ints, &original).is_same(ints));  // only floating tensors are compressed
  }
  torch::Dtype original;
  CHECK(Compression::from_name("none")->compress(x, &original).is_same(x));
  REQUIRE_THROWS_WITH(Compression::from_name("zip"), Catch::Contains("zip"));
  // Compressed allreduce: fp16 on the wire, float32 back, close to the exact sum.
  AllreduceOptions sum;
  sum.op = Sum;
  torch::Tensor exact = allreduce(x * (chorus::rank() + 1), "comp.exact", sum);
  torch::Tensor approx = allreduce(x * (chorus::rank() + 1), "comp.fp16", sum, Compression::fp16());
  CHECK(approx.scalar_type() == torch::kFloat32);
  CHECK(((approx - exact).abs() / exact.abs().clamp_min(1e-2)).max().item<double>() < 4e-3);
}

TEST_CASE("torch ops in a process set: members only, set order, names per set", "[torch][ops][process_set]") {
  const int r = chorus::rank(), n = chorus::size();
  const int last = n - 1;
  const ProcessSet ends = add_process_set({0, last});  // np=3: rank 1 stays out
  const bool member = r == 0 || r == last;
  AllreduceOptions sum;
  sum.op = Sum;
  if (member) {
    const int set_rank = r == 0 ? 0 : 1;
    torch::Tensor t = torch::full({3}, float(r + 1));
    // Unnamed on purpose: rank 1 (np=3) makes no set calls, yet the global
    // unnamed allreduce below must still line up on every rank.
    CHECK(allreduce(t, "", sum, nullptr, ends).eq(float(1 + last + 1)).all().item<bool>());
    torch::Tensor in_place = t.clone();
    allreduce_(in_place, "", sum, ends);
    CHECK(in_place.eq(float(1 + last + 1)).all().item<bool>());
    auto grouped = grouped_allreduce({t, t * 2}, "", sum, ends);
    CHECK(grouped[1].eq(float(2 * (last + 2))).all().item<bool>());
    // Allgather in set order: rank 0's 1 row, then the last rank's 2 rows.
    torch::Tensor rows = allgather(torch::full({set_rank + 1, 2}, float(r)), "", ends);
    CHECK(rows.sizes() == torch::IntArrayRef({3, 2}));
    CHECK(rows[0].eq(0).all().item<bool>());
    CHECK(rows[2].eq(float(last)).all().item<bool>());
    // The root is a global rank.
    CHECK(broadcast(torch::full({2}, float(r)), last, "", ends).eq(float(last)).all().item<bool>());
    torch::Tensor b = torch::full({2}, float(r));
    broadcast_(b, 0, "", ends);
    CHECK(b.eq(0).all().item<bool>());
    torch::Tensor scattered = reducescatter(torch::ones({4, 1}), "", sum, ends);
    CHECK(scattered.sizes() == torch::IntArrayRef({2, 1}));
    CHECK(scattered.eq(2).all().item<bool>());
    AlltoallResult a2a = alltoall(torch::full({2}, float(r)), {}, "", ends);
    CHECK(a2a.received_splits == std::vector<int64_t>({1, 1}));
    CHECK(a2a.output[1].item<float>() == float(last));
  } else {
    torch::Tensor t = torch::ones({1});
    CHECK_THROWS_WITH(allreduce(t, "outside", sum, nullptr, ends), Catch::Contains("is not a member of process set"));
  }
  torch::Tensor everyone = allreduce(torch::ones({2}), "", sum);
  CHECK(everyone.eq(float(n)).all().item<bool>());
  remove_process_set(ends);
}
