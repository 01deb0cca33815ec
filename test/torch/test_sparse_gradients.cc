// Sparse gradients under DistributedOptimizer: an embedding with sparse
// gradients trains to the same parameters as the same model with dense
// gradients, whether its indices and values are allgathered or it is
// densified (sparse_as_dense); ranks touch different rows.
#include "torch_test_util.h"

using namespace chorus;

namespace {

struct BagNetImpl : torch::nn::Module {
  explicit BagNetImpl(bool sparse) {
    torch::manual_seed(3);
    embedding = register_module("embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(20, 4).sparse(sparse)));
    head = register_module("head", torch::nn::Linear(4, 3));
  }
  // Rows of `indices` (rows, 2) -> the mean of their two embeddings -> head;
  // no indices: the head alone on zeros (the embedding gets no gradient).
  torch::Tensor forward(const torch::Tensor& indices, int64_t rows) {
    if (!indices.defined()) return head->forward(torch::zeros({rows, 4}));
    return head->forward(embedding->forward(indices).mean(1));
  }
  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(BagNet);

// Rank r looks up rows near 4r (neighbours overlap, some rows only one rank
// or none touches), 3 + r lookups per step; the last rank of several skips
// the embedding at step `skipped_step`.
int skipped_step = 1;
torch::Tensor indices_for(int rank, int step) {
  if (step == skipped_step && rank == chorus::size() - 1 && chorus::size() > 1) return {};
  torch::manual_seed(100 * rank + step);
  return (torch::randint(0, 8, {3 + rank, 2}, torch::kLong) + 4 * rank) % 20;
}

// Trains three steps; returns the embedding weight, the head's weight and
// whether the embedding's last reduced gradient was sparse.
std::tuple<torch::Tensor, torch::Tensor, bool> train(bool sparse_model, DistributedOptimizerOptions options,
                                                    double momentum) {
  BagNet net(sparse_model);
  options.name_prefix = (options.process_set.is_global() ? "" : "set" + std::to_string(options.process_set.id()) + ".") +
                        (sparse_model ? "sparse." : "dense.");
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.5).momentum(momentum));
  DistributedOptimizer opt(sgd, net->named_parameters(), options);
  bool last_sparse = false;
  for (int step = 0; step < 3; ++step) {
    const int64_t rows = 3 + chorus::rank();
    torch::manual_seed(7 + step + chorus::rank());
    const torch::Tensor target = torch::randn({rows, 3});
    opt.zero_grad();
    torch::mse_loss(net->forward(indices_for(chorus::rank(), step), rows), target).backward();
    opt.synchronize();
    last_sparse = net->embedding->weight.grad().is_sparse();
    opt.skip_synchronize();
    opt.step();
  }
  return {net->embedding->weight.detach().clone(), net->head->weight.detach().clone(), last_sparse};
}

void compare_with_dense(const DistributedOptimizerOptions& options, double momentum, bool expect_sparse) {
  auto [dense_embedding, dense_head, dense_was_sparse] = train(false, options, momentum);
  auto [embedding, head, was_sparse] = train(true, options, momentum);
  CHECK_FALSE(dense_was_sparse);
  CHECK(was_sparse == expect_sparse);
  CHECK((embedding - dense_embedding).abs().max().item<double>() < 1e-6);
  CHECK((head - dense_head).abs().max().item<double>() < 1e-6);
  if (options.process_set.is_global()) CHECK(torch_test::same_on_all_ranks(embedding, "sparse.test.same"));
  // The rows nobody touched did not move; the touched ones did.
  BagNet untrained(false);
  CHECK_FALSE(torch::equal(embedding, untrained->embedding->weight.detach()));
  if (chorus::size() < 4) CHECK(torch::equal(embedding[19], untrained->embedding->weight.detach()[19]));
}

}  // namespace

TEST_CASE("Sparse embedding gradients allgathered train like dense ones", "[sparse]") {
  compare_with_dense({}, 0.0, /*expect_sparse=*/true);
}

TEST_CASE("Sparse embedding gradients with momentum and Sum train like dense ones", "[sparse]") {
  DistributedOptimizerOptions options;
  options.op = ReduceOp::kSum;
  compare_with_dense(options, 0.9, true);
}

TEST_CASE("Sparse embedding gradients with a predivide factor", "[sparse]") {
  DistributedOptimizerOptions options;
  options.gradient_predivide_factor = 2.0;
  compare_with_dense(options, 0.0, true);
}

// Reduced densely, handed back sparse (as Horovod): optimizers that take
// only sparse gradients still work.
TEST_CASE("sparse_as_dense reduces sparse gradients densely", "[sparse]") {
  DistributedOptimizerOptions options;
  options.sparse_as_dense = true;
  compare_with_dense(options, 0.0, /*expect_sparse=*/true);
}

// The last rank has no embedding gradient at the first step while the others
// have sparse ones: the ranks agree to allgather it (not one allgathering and
// one allreducing dense zeros under the same name), flattened or not.
TEST_CASE("A rank without the sparse gradient at the first step still gathers it", "[sparse]") {
  skipped_step = 0;
  for (bool flat : {true, false}) {
    for (bool as_dense : {false, true}) {
      DistributedOptimizerOptions options;
      options.flat_gradients = flat;
      options.sparse_as_dense = as_dense;
      compare_with_dense(options, 0.9, /*expect_sparse=*/true);
    }
  }
  skipped_step = 1;
}

TEST_CASE("Sparse embedding gradients with fp16 compression", "[sparse]") {
  DistributedOptimizerOptions options;
  options.compression = Compression::fp16();
  auto [embedding, head, was_sparse] = train(true, options, 0.0);
  auto [dense_embedding, dense_head, dense_was_sparse] = train(false, options, 0.0);
  CHECK(was_sparse);
  CHECK((embedding - dense_embedding).abs().max().item<double>() < 1e-3);
}

TEST_CASE("Sparse gradients under Max are reduced densely", "[sparse]") {
  DistributedOptimizerOptions options;
  options.op = ReduceOp::kMax;
  compare_with_dense(options, 0.0, /*expect_sparse=*/true);  // densely, handed back sparse
}

// Two process sets (the first and second half of the ranks) each train their
// own model: the sparse gradients are gathered among the set's members only
// and averaged over the set's size, as the dense allreduce in the set is.
TEST_CASE("Sparse embedding gradients inside a process set average over its members", "[sparse][process_set]") {
  const int n = chorus::size(), me = chorus::rank(), half = (n + 1) / 2;
  std::vector<int> first, second;
  for (int r = 0; r < n; ++r) (r < half ? first : second).push_back(r);
  const ProcessSet a = add_process_set(first);
  const ProcessSet b = second.empty() ? ProcessSet() : add_process_set(second);
  for (ReduceOp op : {ReduceOp::kAverage, ReduceOp::kSum}) {
    DistributedOptimizerOptions options;
    options.op = op;
    options.process_set = me < half ? a : b;
    compare_with_dense(options, 0.0, /*expect_sparse=*/true);
    auto [embedding, head, was_sparse] = train(true, options, 0.0);
    // Equal within the set, different from the other set's model.
    const torch::Tensor all = allgather(embedding.flatten().unsqueeze(0).contiguous(), "sparse.test.sets");
    for (int r = 0; r < n; ++r) CHECK(torch::equal(all[r], all[me]) == ((r < half) == (me < half)));
  }
  barrier();
  remove_process_set(a);
  if (!second.empty()) remove_process_set(b);
}

namespace {

// Horovod's random_sparse_tensor: about a fifth of the entries non-zero,
// different on every rank.
torch::Tensor random_sparse(int64_t rows, int64_t seed) {
  torch::manual_seed(1000 * chorus::rank() + seed);
  torch::Tensor t = torch::rand({rows, 10});
  t.masked_fill_(t < 0.8, 0);
  return t.to_sparse();
}

}  // namespace

// Horovod's test_async_sparse_allreduce(_process_sets): gathering indices
// and values equals the dense allreduce, Average and Sum, globally and in
// the even and odd ranks' sets.
TEST_CASE("sparse_allreduce_async equals the dense allreduce", "[sparse][ops]") {
  const int n = chorus::size(), me = chorus::rank();
  std::vector<int> even, odd;
  for (int r = 0; r < n; ++r) (r % 2 == 0 ? even : odd).push_back(r);
  const ProcessSet even_set = add_process_set(even);
  const ProcessSet odd_set = odd.empty() ? ProcessSet() : add_process_set(odd);
  for (const ProcessSet& set : {ProcessSet(), me % 2 == 0 ? even_set : odd_set}) {
    for (ReduceOp op : {ReduceOp::kAverage, ReduceOp::kSum}) {
      const std::vector<int64_t> rows = {17, 32, 81, 12, 15, 23, 22, 1};
      std::vector<torch::Tensor> tensors, dense;
      std::vector<TensorHandle> handles;
      for (size_t i = 0; i < rows.size(); ++i) {
        tensors.push_back(random_sparse(rows[i], static_cast<int64_t>(i)));
        AllreduceOptions options;
        options.op = op;
        dense.push_back(allreduce(tensors.back().to_dense(), "", options, nullptr, set));
      }
      for (size_t i = 0; i < rows.size(); ++i) handles.push_back(sparse_allreduce_async(tensors[i], "", op, set));
      for (size_t i = 0; i < rows.size(); ++i) {
        const torch::Tensor gathered = handles[i].wait();
        REQUIRE(gathered.is_sparse());
        CHECK(torch::allclose(dense[i], gathered.to_dense(), 1e-6, 1e-6));
      }
    }
  }
  // A rank with no non-zeros at all takes part too.
  const torch::Tensor empty = torch::zeros({4, 3}).to_sparse();
  const torch::Tensor mine = me == 0 ? empty : torch::eye(4).narrow(1, 0, 3).to_sparse();
  CHECK(torch::equal(sparse_allreduce(mine, "sparse.empty", ReduceOp::kSum).to_dense(),
                     torch::eye(4).narrow(1, 0, 3) * (n - 1)));
  barrier();
  remove_process_set(even_set);
  if (!odd.empty()) remove_process_set(odd_set);
}

TEST_CASE("sparse_allreduce refuses on every rank what one rank got wrong", "[sparse][ops][errors]") {
  const int n = chorus::size(), me = chorus::rank(), odd_one = n - 1;
  const torch::Tensor sparse = torch::eye(3).to_sparse();
  // A dense tensor on one rank: every rank's call fails, naming it.
  try {
    sparse_allreduce(me == odd_one ? torch::eye(3) : sparse, "sparse.dense");
    FAIL("no error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("sparse.dense") && Catch::Contains("not a sparse (COO) tensor"));
    if (n > 1) CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(odd_one)));
  }
  // Max cannot be gathered.
  CHECK_THROWS_WITH(sparse_allreduce(sparse, "sparse.max", me == odd_one ? ReduceOp::kMax : ReduceOp::kSum),
                    Catch::Contains("op max cannot be gathered"));
  // Integers cannot be averaged one non-zero at a time.
  CHECK_THROWS_WITH(sparse_allreduce(me == odd_one ? sparse.to(torch::kInt64) : sparse, "sparse.int_average"),
                    Catch::Contains("Average of Long values cannot be gathered exactly"));
  // Integers summed stay integers.
  const torch::Tensor ints = sparse_allreduce(sparse.to(torch::kInt64), "sparse.int_sum", ReduceOp::kSum);
  CHECK(ints.scalar_type() == torch::kInt64);
  CHECK(torch::equal(ints.to_dense(), torch::eye(3, torch::kInt64) * n));
  // The job goes on.
  CHECK(torch::equal(sparse_allreduce(sparse, "sparse.after", ReduceOp::kSum).to_dense(), torch::eye(3) * n));
}

namespace {

// "rank 2" or "ranks 0, 1": as the messages name ranks.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// The ranks (of the job) for which `pick` holds.
template <typename Pick>
std::vector<int> ranks_where(Pick pick) {
  std::vector<int> out;
  for (int r = 0; r < chorus::size(); ++r) {
    if (pick(r)) out.push_back(r);
  }
  return out;
}

// The message of the InvalidArgumentError `call` throws ("" when none).
template <typename Call>
std::string invalid_argument_of(Call call) {
  try {
    call();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Ranks that disagree on the layout fail on every rank, with the same words:
// the dtype and sparse_dim (the indices' second dimension) in the core's
// negotiation of the group ("<name>.indices", ".values", ".shape"), the
// shape from the gathered shape rows.
TEST_CASE("sparse_allreduce names the ranks whose dtype, sparse_dim or shape differs", "[sparse][ops][errors]") {
  const int n = chorus::size(), me = chorus::rank(), odd_one = n - 1;
  if (n < 2) return;
  const auto is_other = [&](int r) { return r != odd_one; };
  const torch::Tensor sparse = torch::eye(3).to_sparse();
  std::string what = invalid_argument_of(
      [&] { sparse_allreduce(me == odd_one ? sparse.to(torch::kInt32) : sparse, "sparse.dtype", ReduceOp::kSum); });
  CHECK_THAT(what, Catch::Contains("Mismatched allgather of tensor 'sparse.dtype.values': dtype differs: float32 on " +
                                   rank_list(ranks_where(is_other)) + "; int32 on rank " + std::to_string(odd_one)));
  const torch::Tensor taller = me == odd_one ? torch::eye(6, 3).to_sparse() : sparse;  // 6 x 3 against 3 x 3
  what = invalid_argument_of([&] { sparse_allreduce(taller, "sparse.shape", ReduceOp::kSum); });
  CHECK_THAT(what, Catch::Contains("sparse allreduce of tensor 'sparse.shape': the shape differs: [3, 3] on " +
                                   rank_list(ranks_where(is_other)) + "; [6, 3] on rank " + std::to_string(odd_one)));
  // float64 [N, 2]: sparse_dim 1 against 2 (indices [*, 1] against [*, 2]).
  const torch::Tensor grid = torch::eye(4, 2, torch::kFloat64);
  what = invalid_argument_of(
      [&] { sparse_allreduce(me == odd_one ? grid.to_sparse(2) : grid.to_sparse(1), "sparse.dims", ReduceOp::kSum); });
  CHECK_THAT(what, Catch::Contains("Mismatched allgather of tensor 'sparse.dims.indices': shape after the first "
                                   "dimension differs: [*, 1] on " +
                                   rank_list(ranks_where(is_other)) + "; [*, 2] on rank " + std::to_string(odd_one)));
  if (n >= 3) {  // two ranks (the even ones) against the others, first rank first
    const auto is_even = [](int r) { return r % 2 == 0; };
    const auto is_odd = [](int r) { return r % 2 == 1; };
    what = invalid_argument_of([&] {
      sparse_allreduce(is_even(me) ? torch::eye(6, 3).to_sparse() : sparse, "sparse.shapes", ReduceOp::kSum);
    });
    CHECK_THAT(what, Catch::Contains("the shape differs: [6, 3] on " + rank_list(ranks_where(is_even)) +
                                     "; [3, 3] on " + rank_list(ranks_where(is_odd))));
  }
  // The job goes on.
  CHECK(torch::equal(sparse_allreduce(sparse, "sparse.after_layout", ReduceOp::kSum).to_dense(), torch::eye(3) * n));
}
