// Horovod's gradient tests (test/parallel/test_torch.py: test_horovod_*_grad
// and their grouped and process-set variants) with the values they expect,
// so the ported tests pass unchanged: allgather averages the gradients,
// broadcast averages them on the root, reducescatter scales by the set size
// for Sum and by 1 for Average.
#include <numeric>

#include "torch_test_util.h"

using namespace chorus;

namespace {

const std::vector<int64_t> kRows = {3, 2, 7, 4};  // Horovod's tensor_sizes, first four

// Horovod's test_horovod_allgather_grad in `set` (whose members are `ranks`):
// rank r's input is ones * r, the output gradient block of member r is ones * r,
// and this rank's input gradient must be ones * rank.
void expect_allgather_grad(const std::vector<int>& ranks, const ProcessSet& set, bool grouped) {
  const int me = chorus::rank();
  torch::Tensor x = (torch::ones({kRows[me], 5}, torch::kFloat64) * me).requires_grad_();
  std::vector<torch::Tensor> blocks;
  for (int r : ranks) blocks.push_back(torch::ones({kRows[r], 5}, torch::kFloat64) * r);
  torch::Tensor y = grouped ? grouped_allgather({x}, "hvd.grouped_allgather_grad", set)[0]
                            : allgather(x, "hvd.allgather_grad", set);
  y.backward(torch::cat(blocks));
  CHECK(torch::allclose(x.grad(), torch::ones({kRows[me], 5}, torch::kFloat64) * me, 0, 1e-12));
}

// Horovod's test_horovod_broadcast_grad in `set`: input ones * rank, output
// gradient ones; the root's input gradient is ones, everyone else's zeros.
void expect_broadcast_grad(const std::vector<int>& ranks, const ProcessSet& set) {
  const int me = chorus::rank();
  for (int root : ranks) {
    torch::Tensor x = (torch::ones({4, 3}, torch::kFloat64) * me).requires_grad_();
    broadcast(x, root, "hvd.broadcast_grad." + std::to_string(root), set).backward(torch::ones({4, 3}, torch::kFloat64));
    CHECK(torch::allclose(x.grad(), torch::full({4, 3}, me == root ? 1.0 : 0.0, torch::kFloat64), 0, 1e-12));
  }
}

// Horovod's test_horovod_reducescatter_grad(_average) in `set`: input of
// size*4 rows, output gradient ones; the input gradient is ones * size for
// Sum, ones for Average, times prescale x postscale.
void expect_reducescatter_grad(const ProcessSet& set, int set_size, ReduceOp op, double prescale, bool grouped) {
  AllreduceOptions options;
  options.op = op;
  options.prescale_factor = prescale;
  torch::manual_seed(1234);
  torch::Tensor x = torch::randint(-100, 100, {set_size * 4, 3}, torch::kFloat64).requires_grad_();
  const std::string name = std::string(grouped ? "hvd.grouped_" : "hvd.") + "reducescatter_grad." +
                           reduce_op_name(op) + "." + std::to_string(prescale);
  torch::Tensor y = grouped ? grouped_reducescatter({x}, name, options, set)[0] : reducescatter(x, name, options, set);
  y.backward(torch::ones({4, 3}, torch::kFloat64));
  const double expected = (op == Sum ? set_size : 1) * prescale;
  CHECK(torch::allclose(x.grad(), torch::full({set_size * 4, 3}, expected, torch::kFloat64), 0, 1e-12));
}

// Horovod's even and odd process sets; every rank adds both.
struct EvenOdd {
  std::vector<int> even, odd;
  ProcessSet even_set, odd_set;
  EvenOdd() {
    for (int r = 0; r < chorus::size(); ++r) (r % 2 == 0 ? even : odd).push_back(r);
    even_set = add_process_set(even);
    odd_set = add_process_set(odd);
  }
  ~EvenOdd() {
    barrier();
    remove_process_set(odd_set);
    remove_process_set(even_set);
  }
  const std::vector<int>& mine() const { return chorus::rank() % 2 == 0 ? even : odd; }
  const ProcessSet& my_set() const { return chorus::rank() % 2 == 0 ? even_set : odd_set; }
};

std::vector<int> all_ranks() {
  std::vector<int> ranks(static_cast<size_t>(chorus::size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

}  // namespace

TEST_CASE("Horovod's allgather gradient values: global, grouped, process sets", "[torch][autograd][horovod]") {
  expect_allgather_grad(all_ranks(), ProcessSet(), false);
  expect_allgather_grad(all_ranks(), ProcessSet(), true);
  if (chorus::size() < 2) return;
  EvenOdd sets;
  expect_allgather_grad(sets.mine(), sets.my_set(), false);
  expect_allgather_grad(sets.mine(), sets.my_set(), true);
}

TEST_CASE("Horovod's broadcast gradient values: every root, global and process sets", "[torch][autograd][horovod]") {
  expect_broadcast_grad(all_ranks(), ProcessSet());
  if (chorus::size() < 2) return;
  EvenOdd sets;
  expect_broadcast_grad(sets.mine(), sets.my_set());
}

TEST_CASE("Horovod's reducescatter gradient values: Sum x size, Average x 1, prescale",
          "[torch][autograd][horovod]") {
  for (bool grouped : {false, true}) {
    for (ReduceOp op : {Sum, Average}) {
      expect_reducescatter_grad(ProcessSet(), chorus::size(), op, 1.0, grouped);
      expect_reducescatter_grad(ProcessSet(), chorus::size(), op, 0.5, grouped);
    }
  }
  if (chorus::size() < 2) return;
  EvenOdd sets;
  for (ReduceOp op : {Sum, Average}) {
    expect_reducescatter_grad(sets.my_set(), static_cast<int>(sets.mine().size()), op, 1.0, false);
    expect_reducescatter_grad(sets.my_set(), static_cast<int>(sets.mine().size()), op, 1.0, true);
  }
}
