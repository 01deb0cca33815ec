// Two groups training different models in one job: each group's ranks
// broadcast their state, train with a DistributedOptimizer in their process
// set, and end equal to one process training on the group's union; the two
// groups' models differ. At 4 ranks {0,1} and {2,3}; at 3, {0,1} and {2}.
#include <limits>

#include "torch_test_util.h"

using namespace chorus;

namespace {

struct ModelImpl : torch::nn::Module {
  explicit ModelImpl(int seed) {
    torch::manual_seed(seed);
    fc = register_module("fc", torch::nn::Linear(6, 3));
  }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Model);

constexpr int64_t kRowsPerRank = 4;
constexpr int kSteps = 3;

torch::Tensor data_x(int group) {
  torch::manual_seed(50 + group);
  return torch::randn({16, 6});
}
torch::Tensor data_y(int group) {
  torch::manual_seed(60 + group);
  return torch::randn({16, 3});
}

std::shared_ptr<torch::optim::SGD> sgd(Model& m) {
  return std::make_shared<torch::optim::SGD>(m->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
}

// One process on the group's rows: what the group must reach.
Model reference(int group, int members, int root) {
  Model m(root);  // the root's initial parameters
  auto opt = sgd(m);
  for (int step = 0; step < kSteps; ++step) {
    opt->zero_grad();
    auto x = data_x(group).narrow(0, 0, members * kRowsPerRank), y = data_y(group).narrow(0, 0, members * kRowsPerRank);
    torch::mse_loss(m->fc->forward(x), y).backward();
    opt->step();
  }
  return m;
}

}  // namespace

TEST_CASE("Two process sets train two models side by side", "[torch][process_set][optimizer]") {
  const int n = chorus::size(), me = chorus::rank();
  const int half = (n + 1) / 2;
  std::vector<int> first, second;
  for (int r = 0; r < n; ++r) (r < half ? first : second).push_back(r);
  const ProcessSet a = add_process_set(first);
  const ProcessSet b = second.empty() ? ProcessSet() : add_process_set(second);
  const int group = me < half ? 0 : 1;
  const ProcessSet& set = group == 0 ? a : b;
  const std::vector<int>& members = group == 0 ? first : second;
  const int root = members.front(), set_rank = set.rank_of(me);

  Model model(me);  // every rank starts differently; the broadcast fixes that within the group
  auto opt = sgd(model);
  broadcast_parameters(*model, root, set);
  DistributedOptimizerOptions options;
  options.process_set = set;
  options.name_prefix = "group" + std::to_string(group) + ".";
  DistributedOptimizer dopt(opt, model->named_parameters(), options);
  for (int step = 0; step < kSteps; ++step) {
    dopt.zero_grad();
    auto x = data_x(group).narrow(0, set_rank * kRowsPerRank, kRowsPerRank);
    auto y = data_y(group).narrow(0, set_rank * kRowsPerRank, kRowsPerRank);
    torch::mse_loss(model->fc->forward(x), y).backward();
    dopt.step();
    if (step == 0) broadcast_optimizer_state(dopt, root);  // in the optimizer's own set
  }
  Model expected = reference(group, static_cast<int>(members.size()), root);
  CHECK(torch_test::max_parameter_difference(*model, *expected) < 1e-5);

  // Equal within each group, different across the groups.
  torch::Tensor weights = model->fc->weight.detach().flatten().unsqueeze(0).contiguous();
  torch::Tensor all = allgather(weights, "process_set.training.weights");
  for (int r = 0; r < n; ++r) {
    const bool same_group = (r < half) == (me < half);
    const bool equal = torch::allclose(all[r], all[me], 0, 0);
    CHECK(equal == same_group);
  }
  barrier();
  remove_process_set(a);
  if (!second.empty()) remove_process_set(b);
}

TEST_CASE("A non-member constructing a DistributedOptimizer in a set gets a clear error", "[torch][process_set][errors]") {
  const int n = chorus::size();
  if (n < 2) return;  // needs a rank outside the set
  const ProcessSet set = add_process_set({0});
  if (chorus::rank() != 0) {
    Model model(1);
    DistributedOptimizerOptions options;
    options.process_set = set;
    try {
      DistributedOptimizer dopt(sgd(model), model->named_parameters(), options);
      FAIL("a non-member constructed a DistributedOptimizer in the set");
    } catch (const InvalidArgumentError& e) {
      CHECK_THAT(e.what(), Catch::Contains("is not a member"));
    }
  }
  barrier();
  remove_process_set(set);
}

// The loss scaler's inf/NaN agreement is the optimizer's set's: one set's
// overflow skips that set's step only, and a set never waits on the other.
TEST_CASE("A loss scaler agrees on overflow within its optimizer's process set", "[torch][process_set][loss_scaler]") {
  const int n = chorus::size(), me = chorus::rank();
  if (n < 2) return;  // needs two sets
  const int half = (n + 1) / 2;
  std::vector<int> first, second;
  for (int r = 0; r < n; ++r) (r < half ? first : second).push_back(r);
  const ProcessSet a = add_process_set(first), b = add_process_set(second);
  const int group = me < half ? 0 : 1;
  Model model(group);
  DistributedOptimizerOptions options;
  options.process_set = group == 0 ? a : b;
  options.name_prefix = "scaler.group" + std::to_string(group) + ".";
  DistributedOptimizer dopt(sgd(model), model->named_parameters(), options);
  DynamicLossScaler scaler;
  for (int step = 0; step < 2; ++step) {
    dopt.zero_grad();
    torch::Tensor loss = model->fc->forward(torch::ones({2, 6})).sum();
    // Set 0's first rank overflows at step 0; set 1 never does.
    if (step == 0 && me == 0) loss = loss * std::numeric_limits<float>::infinity();
    scaler.scale(loss).backward();
    const bool stepped = scaler.step(dopt);
    CHECK(stepped == (group == 1 || step == 1));
  }
  CHECK(scaler.skipped_steps() == (group == 0 ? 1 : 0));
  barrier();
  remove_process_set(a);
  remove_process_set(b);
}
