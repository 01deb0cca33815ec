// SyncBatchNorm under mpirun: N ranks with uneven batches normalize like
// one torch BatchNorm over the union of their rows (outputs, running
// statistics, gradients of input, weight and bias), for 1d, 2d and 3d.
#include "torch_test_util.h"

using namespace chorus;

namespace {

constexpr double kTolerance = 1e-5;

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return a.numel() ? (a - b).abs().max().item<double>() : 0.0;
}

// Rank r holds 2 + r rows (uneven), rows [first(r), first(r) + rows(r));
// with g_first_rank_empty, rank 0 none.
bool g_first_rank_empty = false;
int64_t rows_of(int r) { return g_first_rank_empty && r == 0 ? 0 : 2 + r; }
int64_t first_row_of(int r) {
  int64_t first = 0;
  for (int q = 0; q < r; ++q) first += rows_of(q);
  return first;
}

// Runs two training forwards/backwards and one eval forward of a torch
// BatchNorm over the global batch and of SyncBatchNorm over this rank's
// rows, and compares everything the brief names.
// In `set`, rank r is the set's member r (its rows: rows_of(member index)).
template <typename Reference>
void compare_with_reference(Reference reference, const std::vector<int64_t>& sample_shape, c10::optional<double> momentum,
                            const ProcessSet& set = {}) {
  const int r = set.rank_of(chorus::rank());
  const int n = set.is_global() ? chorus::size() : static_cast<int>(set.ranks().size());
  const int64_t channels = sample_shape[0];
  const int64_t global = first_row_of(n), first = first_row_of(r), rows = rows_of(r);
  std::vector<int64_t> shape{global};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  torch::manual_seed(11);
  reference->options.momentum(momentum);
  {
    torch::NoGradGuard no_grad;  // non-trivial affine parameters
    reference->weight.uniform_(0.5, 1.5);
    reference->bias.uniform_(-0.5, 0.5);
  }
  SyncBatchNorm sync(*reference, set);  // copies the parameters
  REQUIRE(sync->options.momentum() == momentum);
  for (int pass = 0; pass < 2; ++pass) {
    const torch::Tensor x = torch::randn(shape) * (pass + 1) + pass;  // the same on every rank
    const torch::Tensor upstream = torch::randn(shape);
    torch::Tensor x_ref = x.clone().requires_grad_(true);
    torch::Tensor y_ref = reference->forward(x_ref);
    (y_ref * upstream).sum().backward();

    torch::Tensor x_mine = x.slice(0, first, first + rows).clone().requires_grad_(true);
    torch::Tensor y_mine = sync->forward(x_mine);
    (y_mine * upstream.slice(0, first, first + rows)).sum().backward();

    CHECK(max_diff(y_mine, y_ref.slice(0, first, first + rows)) < kTolerance);
    CHECK(max_diff(x_mine.grad(), x_ref.grad().slice(0, first, first + rows)) < kTolerance);
    CHECK(max_diff(sync->running_mean, reference->running_mean) < kTolerance);
    CHECK(max_diff(sync->running_var, reference->running_var) < kTolerance);
    CHECK(sync->num_batches_tracked.item<int64_t>() == reference->num_batches_tracked.template item<int64_t>());
    // Weight and bias gradients are this rank's share: their sum is the global one.
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    CHECK(max_diff(allreduce(sync->weight.grad(), "sbn.test.wgrad", sum, nullptr, set), reference->weight.grad()) <
          kTolerance);
    CHECK(max_diff(allreduce(sync->bias.grad(), "sbn.test.bgrad", sum, nullptr, set), reference->bias.grad()) <
          kTolerance);
    sync->zero_grad();
    reference->zero_grad();
  }
  sync->eval();
  reference->eval();
  const torch::Tensor x = torch::randn(shape);
  torch::Tensor mine = sync->forward(x.slice(0, first, first + rows));
  CHECK(max_diff(mine, reference->forward(x).slice(0, first, first + rows)) < kTolerance);
}

}  // namespace

TEST_CASE("SyncBatchNorm1d on (N, C) equals BatchNorm1d over the global batch", "[sync_batch_norm]") {
  compare_with_reference(torch::nn::BatchNorm1d(5), {5}, 0.1);
}

TEST_CASE("SyncBatchNorm1d on (N, C, L) with a cumulative average equals BatchNorm1d", "[sync_batch_norm]") {
  compare_with_reference(torch::nn::BatchNorm1d(3), {3, 7}, c10::nullopt);
}

TEST_CASE("SyncBatchNorm2d equals BatchNorm2d over the global batch", "[sync_batch_norm]") {
  compare_with_reference(torch::nn::BatchNorm2d(4), {4, 3, 5}, 0.3);
}

TEST_CASE("SyncBatchNorm3d equals BatchNorm3d over the global batch", "[sync_batch_norm]") {
  compare_with_reference(torch::nn::BatchNorm3d(2), {2, 3, 2, 4}, 0.1);
}

TEST_CASE("SyncBatchNorm with a rank that has no rows", "[sync_batch_norm]") {
  if (chorus::size() < 2) return;  // one rank without rows has no values at all
  g_first_rank_empty = true;
  compare_with_reference(torch::nn::BatchNorm2d(3), {3, 2, 2}, 0.1);
  g_first_rank_empty = false;
}

TEST_CASE("SyncBatchNorm in a process set uses its members' batches only", "[sync_batch_norm]") {
  if (chorus::size() < 2) return;  // two non-empty sets need two ranks
  std::vector<int> evens, odds;
  for (int q = 0; q < chorus::size(); ++q) (q % 2 ? odds : evens).push_back(q);
  const ProcessSet even_set = add_process_set(evens), odd_set = add_process_set(odds);
  const ProcessSet& mine = chorus::rank() % 2 ? odd_set : even_set;
  compare_with_reference(torch::nn::BatchNorm2d(3), {3, 2, 2}, 0.1, mine);
  remove_process_set(even_set);
  remove_process_set(odd_set);
}

TEST_CASE("SyncBatchNorm without affine or running stats uses batch statistics in eval too", "[sync_batch_norm]") {
  const int r = chorus::rank(), n = chorus::size();
  torch::nn::BatchNorm2d reference(torch::nn::BatchNorm2dOptions(3).affine(false).track_running_stats(false));
  SyncBatchNorm sync(SyncBatchNormOptions(3).affine(false).track_running_stats(false));
  CHECK(sync->parameters().empty());
  sync->eval();
  reference->eval();
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({first_row_of(n), 3, 2, 2});
  torch::Tensor x_ref = x.clone().requires_grad_(true);
  torch::Tensor x_mine = x.slice(0, first_row_of(r), first_row_of(r) + rows_of(r)).clone().requires_grad_(true);
  torch::Tensor y_ref = reference->forward(x_ref), y_mine = sync->forward(x_mine);
  y_ref.pow(3).sum().backward();
  y_mine.pow(3).sum().backward();
  CHECK(max_diff(y_mine, y_ref.slice(0, first_row_of(r), first_row_of(r) + rows_of(r))) < kTolerance);
  CHECK(max_diff(x_mine.grad(), x_ref.grad().slice(0, first_row_of(r), first_row_of(r) + rows_of(r))) < kTolerance);
}

TEST_CASE("SyncBatchNorm refuses inputs it cannot normalize", "[sync_batch_norm]") {
  SyncBatchNorm sync(SyncBatchNormOptions(4).name("sbn.bad"));
  CHECK_THROWS_WITH(sync->forward(torch::randn({3, 5})),
                    Catch::Contains("SyncBatchNorm 'sbn.bad'") && Catch::Contains("has 5 channels, the module 4"));
  CHECK_THROWS_AS(sync->forward(torch::randn({4})), InvalidArgumentError);
  if (chorus::size() == 1) {  // one value per channel over the set: every member sees the same count
    CHECK_THROWS_WITH(sync->forward(torch::randn({1, 4})), Catch::Contains("expected more than 1 value per channel"));
  }
  CHECK_THROWS_AS(SyncBatchNorm(SyncBatchNormOptions(0)), InvalidArgumentError);
}

// One member's bad input (a batch of one squeezed to 1-D, say) fails every
// member of the forward: the others are told which rank, none waits for it.
TEST_CASE("SyncBatchNorm: one rank's bad input fails every member", "[sync_batch_norm]") {
  const int r = chorus::rank(), n = chorus::size();
  SyncBatchNorm sync(SyncBatchNormOptions(4).name("sbn.one_bad"));
  for (const torch::Tensor& bad : {torch::randn({3, 5}), torch::randn({4})}) {
    const torch::Tensor input = r == n - 1 ? bad : torch::randn({3, 4});
    try {
      sync->forward(input);
      FAIL("expected an error");
    } catch (const InvalidArgumentError& e) {
      if (r == n - 1) {
        CHECK_THAT(e.what(), Catch::Contains("SyncBatchNorm 'sbn.one_bad'") &&
                                 (Catch::Contains("got shape") || Catch::Contains("channels, the module 4")));
      }
      else CHECK_THAT(e.what(), Catch::Contains("rank(s) " + std::to_string(n - 1) + " refused their input"));
    }
  }
  // Still usable afterwards, with the same collective names on every rank.
  CHECK(sync->forward(torch::randn({3, 4})).size(0) == 3);
}

// As PyTorch: a float16 input comes back float16 while the statistics and
// the arithmetic stay float32 (a float32 module, the usual mixed precision).
TEST_CASE("SyncBatchNorm on float16 input returns float16 with float32 statistics", "[sync_batch_norm]") {
  const int r = chorus::rank(), n = chorus::size();
  const int64_t first = first_row_of(r), rows = rows_of(r);
  torch::nn::BatchNorm2d reference(3);
  SyncBatchNorm sync(*reference);
  torch::manual_seed(9);
  const torch::Tensor x = (torch::randn({first_row_of(n), 3, 2, 2}) * 3 + 1).to(torch::kHalf);
  const torch::Tensor upstream = torch::randn(x.sizes());
  torch::Tensor x_ref = x.to(torch::kFloat32).requires_grad_(true);
  torch::Tensor x_mine = x.slice(0, first, first + rows).clone().requires_grad_(true);
  torch::Tensor y_ref = reference->forward(x_ref), y_mine = sync->forward(x_mine);
  (y_ref * upstream).sum().backward();
  (y_mine * upstream.slice(0, first, first + rows).to(torch::kHalf)).sum().backward();
  CHECK(y_mine.scalar_type() == torch::kHalf);
  CHECK(x_mine.grad().scalar_type() == torch::kHalf);
  CHECK(sync->running_mean.scalar_type() == torch::kFloat32);
  CHECK(sync->weight.grad().scalar_type() == torch::kFloat32);
  constexpr double kHalfTolerance = 1e-2;  // float16 keeps about 3 decimal digits
  CHECK(max_diff(y_mine.to(torch::kFloat32), y_ref.slice(0, first, first + rows)) < kHalfTolerance);
  CHECK(max_diff(x_mine.grad().to(torch::kFloat32), x_ref.grad().slice(0, first, first + rows)) < kHalfTolerance);
  // Statistics from float32 arithmetic: as close as float32 allows.
  CHECK(max_diff(sync->running_mean, reference->running_mean) < kTolerance);
  CHECK(max_diff(sync->running_var, reference->running_var) < kTolerance);
}
