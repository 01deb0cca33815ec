// Autograd through the collectives under mpirun: every rank's forward result
// equals the one a single process gets by computing every rank's part itself,
// and its gradient that process's gradient of the sum of the ranks' losses
// times Horovod's factor for the collective (1, or 1/size for allgather and
// broadcast, size for reducescatter). The last cases check the exact values
// Horovod's test/parallel/test_torch.py expects.
#include "torch_test_util.h"

using namespace chorus;

namespace {

using Shapes = std::function<std::vector<int64_t>(int rank)>;
// This rank's distributed result for its input.
using Distributed = std::function<torch::Tensor(const torch::Tensor& x)>;
// Every rank's result, from every rank's input, on one process.
using Reference = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>& xs)>;

torch::Tensor input_of(int r, const std::vector<int64_t>& shape) {
  torch::manual_seed(100 + r);
  return torch::randn(shape, torch::kFloat64);
}

// Rank s's loss: nonlinear, with weights of its own, so gradients differ per rank.
torch::Tensor loss_of(const torch::Tensor& y, int s) {
  torch::manual_seed(1000 + s);
  return (torch::randn(y.sizes(), y.options()) * y * y).sum();
}

void expect_reference_gradient(const Shapes& shape_of, const Distributed& distributed, const Reference& reference,
                               double grad_scale = 1.0) {
  const int n = chorus::size(), me = chorus::rank();
  torch::Tensor x = input_of(me, shape_of(me)).requires_grad_();
  torch::Tensor y = distributed(x);
  REQUIRE(y.requires_grad());
  loss_of(y, me).backward();

  std::vector<torch::Tensor> xs;
  for (int r = 0; r < n; ++r) xs.push_back(input_of(r, shape_of(r)).requires_grad_());
  std::vector<torch::Tensor> ys = reference(xs);
  torch::Tensor total = torch::zeros({}, torch::kFloat64);
  for (int s = 0; s < n; ++s) total = total + loss_of(ys[s], s);
  total.backward();

  REQUIRE(y.sizes() == ys[me].sizes());
  CHECK(torch::allclose(y, ys[me], 1e-9, 1e-12));
  REQUIRE(x.grad().defined());
  // An input that reaches no output (a broadcast's non-root) has no gradient: zeros.
  torch::Tensor expected = xs[me].grad().defined() ? xs[me].grad() * grad_scale : torch::zeros_like(xs[me]);
  REQUIRE(x.grad().sizes() == expected.sizes());
  CHECK(torch::allclose(x.grad(), expected, 1e-9, 1e-12));
}

// The same for a group of two members: member m of rank r is input
// 10 * m + r, its loss seeded 10 * m + s; the reference runs each member
// alone on one process.
using GroupedDistributed = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>& xs)>;
void expect_grouped_reference_gradient(const Shapes& shape_of, const GroupedDistributed& distributed,
                                       const Reference& reference, double grad_scale = 1.0) {
  const int n = chorus::size(), me = chorus::rank(), members = 2;
  std::vector<torch::Tensor> mine;
  for (int m = 0; m < members; ++m) mine.push_back(input_of(10 * m + me, shape_of(me)).requires_grad_());
  std::vector<torch::Tensor> ys = distributed(mine);
  REQUIRE(ys.size() == static_cast<size_t>(members));
  torch::Tensor local = torch::zeros({}, torch::kFloat64);
  for (int m = 0; m < members; ++m) local = local + loss_of(ys[m], 10 * m + me);
  local.backward();
  for (int m = 0; m < members; ++m) {
    std::vector<torch::Tensor> xs;
    for (int r = 0; r < n; ++r) xs.push_back(input_of(10 * m + r, shape_of(r)).requires_grad_());
    std::vector<torch::Tensor> expected_ys = reference(xs);
    torch::Tensor total = torch::zeros({}, torch::kFloat64);
    for (int s = 0; s < n; ++s) total = total + loss_of(expected_ys[s], 10 * m + s);
    total.backward();
    CHECK(torch::allclose(ys[m], expected_ys[me], 1e-9, 1e-12));
    CHECK(torch::allclose(mine[m].grad(), xs[me].grad() * grad_scale, 1e-9, 1e-12));
  }
}

std::vector<int64_t> fixed(int) { return {3, 4}; }

// Every rank's block of a reducescatter of `reduced`: the first rows % size ranks get one row more.
std::vector<torch::Tensor> scattered_blocks(const torch::Tensor& reduced) {
  const int n = chorus::size();
  const int64_t rows = reduced.size(0);
  std::vector<torch::Tensor> ys;
  int64_t offset = 0;
  for (int r = 0; r < n; ++r) {
    const int64_t mine = rows / n + (r < rows % n ? 1 : 0);
    ys.push_back(reduced.narrow(0, offset, mine));
    offset += mine;
  }
  return ys;
}

std::vector<torch::Tensor> same_for_all(const torch::Tensor& y) { return std::vector<torch::Tensor>(chorus::size(), y); }

}  // namespace

TEST_CASE("allreduce's gradient is the allreduce of the gradients", "[torch][autograd]") {
  const int n = chorus::size();
  AllreduceOptions sum;
  sum.op = Sum;
  expect_reference_gradient(
      fixed, [&](const torch::Tensor& x) { return allreduce(x, "grad.allreduce.sum", sum); },
      [](const std::vector<torch::Tensor>& xs) { return same_for_all(torch::stack(xs).sum(0)); });
  AllreduceOptions scaled;  // Average with scale factors on top
  scaled.prescale_factor = 3.0;
  scaled.postscale_factor = 0.5;
  expect_reference_gradient(
      fixed, [&](const torch::Tensor& x) { return allreduce(x, "", scaled); },  // unnamed: the backward's name follows
      [n](const std::vector<torch::Tensor>& xs) { return same_for_all(torch::stack(xs).sum(0) * 1.5 / n); });
}

TEST_CASE("allreduce with Max has no gradient: a clear error on every rank", "[torch][autograd][errors]") {
  AllreduceOptions mx;
  mx.op = Max;
  torch::Tensor x = input_of(chorus::rank(), {2}).requires_grad_();
  torch::Tensor y = allreduce(x, "grad.allreduce.max", mx);
  try {
    y.sum().backward();
    FAIL("backward through a Max allreduce did not throw");
  } catch (const std::exception& e) {
    CHECK_THAT(e.what(), Catch::Contains("'grad.allreduce.max' with max has no gradient"));
  }
}

TEST_CASE("allgather's gradient: the ranks' gradients averaged, this rank's rows", "[torch][autograd]") {
  // A different first dimension on every rank.
  auto rows = [](int r) { return std::vector<int64_t>{r + 1, 2}; };
  expect_reference_gradient(
      rows, [](const torch::Tensor& x) { return allgather(x, "grad.allgather"); },
      [](const std::vector<torch::Tensor>& xs) { return same_for_all(torch::cat(xs)); }, 1.0 / chorus::size());
}

TEST_CASE("A scalar that requires grad, on one rank, fails allgather and alltoall on every rank",
          "[torch][autograd][errors]") {
  const bool odd_one = chorus::rank() == 0;  // the others pass one row: only negotiation tells them
  torch::Tensor x = (odd_one ? torch::ones({}) : torch::ones({1})).requires_grad_();
  const std::vector<std::function<void()>> calls = {
      [&] { allgather(x, "grad.scalar.allgather"); },
      [&] { alltoall(x, {}, "grad.scalar.alltoall"); },
      [&] { grouped_allgather({x, torch::ones({2}).requires_grad_()}, "grad.scalar.grouped"); },
  };
  for (const auto& call : calls) {
    try {
      call();
      FAIL("a scalar on rank 0 was gathered");
    } catch (const InvalidArgumentError& e) {
      CHECK_THAT(e.what(), Catch::Contains("scalar"));
    }
  }
}

TEST_CASE("broadcast's gradient: the average of the gradients on the root, zeros elsewhere", "[torch][autograd]") {
  const int root = chorus::size() - 1;
  expect_reference_gradient(
      fixed, [root](const torch::Tensor& x) { return broadcast(x, root, "grad.broadcast"); },
      [root](const std::vector<torch::Tensor>& xs) { return same_for_all(xs[static_cast<size_t>(root)] * 1.0); },
      1.0 / chorus::size());
}

TEST_CASE("alltoall's gradient: the reverse alltoall, zeros for rows not sent", "[torch][autograd]") {
  const int n = chorus::size();
  // Rank r sends (r + j) % 3 rows to rank j, and keeps one row it never sends.
  auto splits_of = [n](int r) {
    std::vector<int64_t> s;
    for (int j = 0; j < n; ++j) s.push_back((r + j) % 3);
    return s;
  };
  auto rows = [&](int r) {
    auto s = splits_of(r);
    return std::vector<int64_t>{std::accumulate(s.begin(), s.end(), int64_t{1}), 3};
  };
  expect_reference_gradient(
      rows,
      [&](const torch::Tensor& x) {
        AlltoallResult result = alltoall(x, splits_of(chorus::rank()), "grad.alltoall");
        CHECK(result.received_splits.size() == static_cast<size_t>(n));
        return result.output;
      },
      [&](const std::vector<torch::Tensor>& xs) {
        std::vector<torch::Tensor> ys;
        for (int j = 0; j < n; ++j) {
          std::vector<torch::Tensor> parts;
          for (int r = 0; r < n; ++r) {
            auto s = splits_of(r);
            const int64_t offset = std::accumulate(s.begin(), s.begin() + j, int64_t{0});
            parts.push_back(xs[static_cast<size_t>(r)].narrow(0, offset, s[static_cast<size_t>(j)]));
          }
          ys.push_back(torch::cat(parts));
        }
        return ys;
      });
}

TEST_CASE("reducescatter's gradient: the allgather of the gradients, times size for Sum", "[torch][autograd]") {
  const int n = chorus::size();
  const int64_t rows = 2 * n + 1;  // uneven blocks: the first rank gets one row more
  auto shape = [rows](int) { return std::vector<int64_t>{rows, 2}; };
  AllreduceOptions sum;
  sum.op = Sum;
  expect_reference_gradient(
      shape, [&](const torch::Tensor& x) { return reducescatter(x, "grad.reducescatter.sum", sum); },
      [&](const std::vector<torch::Tensor>& xs) { return scattered_blocks(torch::stack(xs).sum(0)); }, n);
  AllreduceOptions average;
  average.prescale_factor = 2.0;
  expect_reference_gradient(
      shape, [&](const torch::Tensor& x) { return reducescatter(x, "grad.reducescatter.avg", average); },
      [&](const std::vector<torch::Tensor>& xs) { return scattered_blocks(torch::stack(xs).sum(0) * 2.0 / n); }, n);
}

TEST_CASE("Grouped allreduce, allgather and reducescatter carry gradients too", "[torch][autograd][group]") {
  const int n = chorus::size();
  AllreduceOptions average;
  expect_grouped_reference_gradient(
      fixed, [&](const std::vector<torch::Tensor>& xs) { return grouped_allreduce(xs, "grad.grouped.allreduce", average); },
      [n](const std::vector<torch::Tensor>& xs) { return same_for_all(torch::stack(xs).sum(0) / n); });
  auto rows = [](int r) { return std::vector<int64_t>{2 * r + 1, 2}; };
  expect_grouped_reference_gradient(
      rows, [](const std::vector<torch::Tensor>& xs) { return grouped_allgather(xs, "grad.grouped.allgather"); },
      [](const std::vector<torch::Tensor>& xs) { return same_for_all(torch::cat(xs)); }, 1.0 / n);
  AllreduceOptions sum;
  sum.op = Sum;
  const int64_t total_rows = n + 2;
  expect_grouped_reference_gradient(
      [total_rows](int) { return std::vector<int64_t>{total_rows, 3}; },
      [&](const std::vector<torch::Tensor>& xs) { return grouped_reducescatter(xs, "", sum); },
      [](const std::vector<torch::Tensor>& xs) { return scattered_blocks(torch::stack(xs).sum(0)); }, n);
}

TEST_CASE("Autograd through a collective in a process set", "[torch][autograd][process_set]") {
  const int n = chorus::size();
  std::vector<int> odd_out;  // every rank but the last
  for (int r = 0; r < std::max(1, n - 1); ++r) odd_out.push_back(r);
  const ProcessSet set = add_process_set(odd_out);
  if (set.rank_of(chorus::rank()) >= 0) {
    const int m = static_cast<int>(odd_out.size()), me = set.rank_of(chorus::rank());
    torch::Tensor x = input_of(chorus::rank(), {me + 1, 2}).requires_grad_();
    torch::Tensor y = allgather(x, "grad.set.allgather", set);
    loss_of(y, chorus::rank()).backward();
    std::vector<torch::Tensor> xs;
    for (int r = 0; r < m; ++r) xs.push_back(input_of(r, {r + 1, 2}).requires_grad_());
    torch::Tensor all = torch::cat(xs);
    torch::Tensor total = torch::zeros({}, torch::kFloat64);
    for (int s = 0; s < m; ++s) total = total + loss_of(all, s);
    total.backward();
    CHECK(torch::allclose(x.grad(), xs[static_cast<size_t>(me)].grad() / m, 1e-9, 1e-12));  // averaged in the set
  }
  barrier();
  remove_process_set(set);
}

TEST_CASE("No autograd when the tensor does not require grad, or under NoGradGuard", "[torch][autograd]") {
  torch::Tensor x = input_of(chorus::rank(), {2}).requires_grad_();
  {
    torch::NoGradGuard no_grad;
    CHECK_FALSE(allreduce(x, "grad.none.guard").requires_grad());
  }
  CHECK_FALSE(allgather(x.detach(), "grad.none.detached").requires_grad());
}
