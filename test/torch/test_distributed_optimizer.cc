// DistributedOptimizer under mpirun: N ranks on disjoint shards train to the
// same parameters as one process on their union; accumulation; unused
// parameters; synchronize/skip; the loss scaler; every error case.
#include "torch_test_util.h"

using namespace chorus;

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(torch::tanh(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Net);

Net seeded_net() {
  torch::manual_seed(42);
  return Net();
}

// The same data on every rank; the test decides who uses which rows.
struct Data {
  torch::Tensor x, y;
  explicit Data(int64_t rows) {
    torch::manual_seed(7);
    x = torch::randn({rows, 8});
    y = torch::randn({rows, 4});
  }
};

using MakeOptimizer = std::function<std::shared_ptr<torch::optim::Optimizer>(Net&)>;

std::shared_ptr<torch::optim::Optimizer> sgd_momentum(Net& net) {
  return std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
}

std::shared_ptr<torch::optim::Optimizer> adam(Net& net) {
  return std::make_shared<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(0.01));
}

std::shared_ptr<torch::optim::Optimizer> adamw(Net& net) {
  return std::make_shared<torch::optim::AdamW>(net->parameters(), torch::optim::AdamWOptions(0.01).weight_decay(0.1));
}

std::shared_ptr<torch::optim::Optimizer> rmsprop(Net& net) {
  return std::make_shared<torch::optim::RMSprop>(net->parameters(), torch::optim::RMSpropOptions(0.01).momentum(0.5));
}

std::shared_ptr<torch::optim::Optimizer> adagrad(Net& net) {
  return std::make_shared<torch::optim::Adagrad>(net->parameters(), torch::optim::AdagradOptions(0.1));
}

// Options of a test that checks plain sums: op Sum, names under `prefix`.
DistributedOptimizerOptions summing(const std::string& prefix) {
  DistributedOptimizerOptions options;
  options.name_prefix = prefix;
  options.op = Sum;
  return options;
}

void backward_on(Net& net, const Data& d, int64_t first, int64_t rows) {
  auto x = d.x.slice(0, first, first + rows), y = d.y.slice(0, first, first + rows);
  torch::mse_loss(net->forward(x), y).backward();
}

// Trains `steps` steps data-parallel with per-rank batch `batch` and
// `passes` backward passes per step, and the same on one process with
// batch size x passes x batch; returns the largest parameter difference.
double distributed_vs_single(const MakeOptimizer& make, int steps, int64_t batch, int passes,
                             std::shared_ptr<Compression> compression = nullptr) {
  const int r = chorus::rank(), n = chorus::size();
  const int64_t global = n * passes * batch;
  Data data(steps * global);
  Net single = seeded_net();
  auto single_opt = make(single);
  for (int s = 0; s < steps; ++s) {
    single_opt->zero_grad();
    backward_on(single, data, s * global, global);
    single_opt->step();
  }
  Net net = seeded_net();
  DistributedOptimizerOptions options;
  options.backward_passes_per_step = passes;
  options.compression = compression;
  options.name_prefix = "dp." + std::to_string(passes) + "." + (compression ? compression->name() : "none") + ".";
  DistributedOptimizer opt(make(net), net->named_parameters(), options);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    // Rank r's shard of step s: pass p uses rows [s*global + (p*n + r)*batch, +batch).
    for (int p = 0; p < passes; ++p) backward_on(net, data, s * global + (p * n + r) * batch, batch);
    opt.step();
  }
  REQUIRE(torch_test::same_on_all_ranks(torch::cat({net->fc1->weight.flatten(), net->fc2->bias}), options.name_prefix + "check"));
  return torch_test::max_parameter_difference(*single, *net);
}

}  // namespace

TEST_CASE("Data-parallel SGD with momentum equals one process on the union", "[torch][optimizer]") {
  CHECK(distributed_vs_single(sgd_momentum, 5, 4, 1) < 1e-5);
}

TEST_CASE("Data-parallel Adam equals one process on the union", "[torch][optimizer]") {
  CHECK(distributed_vs_single(adam, 5, 4, 1) < 1e-5);
}

TEST_CASE("Data-parallel AdamW, RMSprop and Adagrad equal one process on the union", "[torch][optimizer]") {
  CHECK(distributed_vs_single(adamw, 4, 4, 1) < 1e-5);
  CHECK(distributed_vs_single(rmsprop, 4, 4, 1) < 1e-5);
  CHECK(distributed_vs_single(adagrad, 4, 4, 1) < 1e-5);
}

TEST_CASE("backward_passes_per_step = k equals a batch k times larger", "[torch][optimizer]") {
  CHECK(distributed_vs_single(sgd_momentum, 3, 4, 3) < 1e-5);
  CHECK(distributed_vs_single(adam, 3, 2, 2) < 1e-5);
}

TEST_CASE("fp16 and bf16 compression stay within their documented bounds", "[torch][optimizer][compression]") {
  // docs/torch.md: 16-bit gradients on the wire cost about 1e-3 (fp16) and
  // 1e-2 (bf16) of parameter accuracy over a few steps of this model.
  const double fp16 = distributed_vs_single(sgd_momentum, 5, 4, 1, Compression::fp16());
  const double bf16 = distributed_vs_single(sgd_momentum, 5, 4, 1, Compression::bf16());
  INFO("fp16 " << fp16 << ", bf16 " << bf16);
  CHECK(fp16 < 1e-3);
  CHECK(bf16 < 1e-2);
  CHECK(fp16 > 0);  // it did go through 16 bits
}

TEST_CASE("Ranks with flat gradients and ranks without train to the same parameters", "[torch][optimizer][flat]") {
  // Flat gradients lie back to back and are reduced in place; per-tensor ones
  // go through the fusion buffer. Whatever each rank's layout, every rank
  // must compute the same average (under every route: see the ring run).
  const int r = chorus::rank(), n = chorus::size();
  const int steps = 6;
  const int64_t batch = 4;
  Data data(steps * n * batch);
  Net single = seeded_net();
  auto single_opt = sgd_momentum(single);
  for (int s = 0; s < steps; ++s) {
    single_opt->zero_grad();
    backward_on(single, data, s * n * batch, n * batch);
    single_opt->step();
  }
  Net net = seeded_net();
  DistributedOptimizerOptions options;
  options.flat_gradients = r % 2 == 0;
  options.name_prefix = "mixed.flat.";
  DistributedOptimizer opt(sgd_momentum(net), net->named_parameters(), options);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    backward_on(net, data, (s * n + r) * batch, batch);
    opt.step();
  }
  REQUIRE(torch_test::same_on_all_ranks(torch::cat({net->fc1->weight.flatten(), net->fc2->bias}), "mixed.flat.check"));
  CHECK(torch_test::max_parameter_difference(*single, *net) < 1e-5);
}

TEST_CASE("Parameters without a gradient are reduced as zeros", "[torch][optimizer]") {
  const int r = chorus::rank();
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(1.0));
  DistributedOptimizer opt(sgd, net->named_parameters(), summing("unused."));
  torch::Tensor w2 = net->fc2->weight.detach().clone();
  // Only rank 0 runs a backward that reaches fc1; nobody's reaches fc2.
  if (r == 0) net->fc1->forward(torch::ones({2, 8})).sum().backward();
  // d(sum)/d(fc1.weight) of two rows of ones is 2 everywhere.
  const torch::Tensor expected = torch::full({16, 8}, 2.0f);
  opt.synchronize();
  CHECK(net->fc2->weight.grad().defined());
  CHECK(net->fc2->weight.grad().eq(0).all().item<bool>());
  torch::Tensor g = broadcast(net->fc1->weight.grad(), 0, "unused.reference");
  CHECK(torch::equal(net->fc1->weight.grad(), g));
  CHECK(torch::allclose(g, expected));  // Sum of rank 0's gradient and zeros
  opt.skip_synchronize();
  opt.step();
  CHECK(torch::equal(net->fc2->weight, w2));  // zero gradient, plain SGD: unchanged
}

TEST_CASE("synchronize, clip, skip_synchronize, step", "[torch][optimizer]") {
  const int n = chorus::size();
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.5));
  DistributedOptimizer opt(sgd, net->named_parameters(), summing("clip."));
  torch::Tensor before = net->fc2->bias.detach().clone();
  net->forward(torch::ones({1, 8})).sum().backward();
  // d(sum of outputs)/d(fc2.bias) is 1 on every rank (the gradient itself
  // is being reduced in place already, so it is not read here).
  const torch::Tensor local = torch::ones({4});
  opt.synchronize();
  CHECK(torch::allclose(net->fc2->bias.grad(), local * n));
  opt.synchronize();  // no new gradient: nothing is reduced again
  CHECK(torch::allclose(net->fc2->bias.grad(), local * n));
  torch::nn::utils::clip_grad_norm_(net->parameters(), 0.01);
  torch::Tensor clipped = net->fc2->bias.grad().clone();
  opt.skip_synchronize();
  opt.step();
  CHECK(torch::allclose(net->fc2->bias, before - 0.5 * clipped));
}

TEST_CASE("DistributedOptimizer error cases", "[torch][optimizer][errors]") {
  const int r = chorus::rank(), n = chorus::size();
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));

  SECTION("zero_grad with allreduces pending") {
    DistributedOptimizerOptions options;
    options.name_prefix = "err.pending.";
    DistributedOptimizer opt(sgd, net->named_parameters(), options);
    net->forward(torch::ones({1, 8})).sum().backward();
    REQUIRE_THROWS_AS(opt.zero_grad(), PreconditionError);
    REQUIRE_THROWS_WITH(opt.zero_grad(), Catch::Contains("err.pending.fc"));
    opt.step();
    opt.zero_grad();
  }
  SECTION("more backward passes than backward_passes_per_step") {
    DistributedOptimizerOptions options;
    options.name_prefix = "err.passes.";
    DistributedOptimizer opt(sgd, net->named_parameters(), options);
    net->forward(torch::ones({1, 8})).sum().backward();
    REQUIRE_THROWS_WITH(net->forward(torch::ones({1, 8})).sum().backward(),
                        Catch::Contains("backward passes before step()"));
    opt.synchronize();
  }
  SECTION("duplicate and missing names") {
    std::vector<std::pair<std::string, torch::Tensor>> dup = {{"w", net->fc1->weight}, {"w", net->fc1->bias},
                                                              {"a", net->fc2->weight}, {"b", net->fc2->bias}};
    REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, dup), Catch::Contains("two parameters are named 'w'"));
    std::vector<std::pair<std::string, torch::Tensor>> partial = {{"fc1.weight", net->fc1->weight}};
    REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, partial), Catch::Contains("does not name"));
  }
  SECTION("ranks that disagree on the parameters") {
    auto named = net->named_parameters();
    std::vector<std::pair<std::string, torch::Tensor>> list;
    for (const auto& item : named) list.emplace_back(item.key() + (r == n - 1 ? ".odd" : ""), item.value());
    try {
      DistributedOptimizer opt(sgd, list);
      FAIL("expected an error");
    } catch (const InvalidArgumentError& e) {
      CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(n - 1) + " has"));
    }
  }
  SECTION("one rank's bad input fails every rank, not a hang") {
    std::vector<std::pair<std::string, torch::Tensor>> list;
    for (const auto& item : net->named_parameters()) list.emplace_back(item.key(), item.value());
    if (r == n - 1) list[1].first = list[0].first;  // a duplicate name on the last rank only
    try {
      DistributedOptimizer opt(sgd, list);
      FAIL("expected an error");
    } catch (const InvalidArgumentError& e) {
      if (r == n - 1) CHECK_THAT(e.what(), Catch::Contains("two parameters are named"));
      else CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(n - 1) + " has"));
    }
  }
  SECTION("one rank's parameter on a device Chorus refuses fails every rank") {
    // Same names, shapes and dtypes everywhere: only the device differs.
    torch::Tensor odd = torch::empty({4}, torch::TensorOptions().device(torch::kMeta).requires_grad(true));
    std::vector<std::pair<std::string, torch::Tensor>> list;
    std::vector<torch::Tensor> params;
    for (const auto& item : net->named_parameters()) {
      const bool swap = r == n - 1 && item.key() == "fc2.bias";
      list.emplace_back(item.key(), swap ? odd : item.value());
      params.push_back(list.back().second);
    }
    auto own = std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1));
    DistributedOptimizerOptions options;
    options.name_prefix = "err.device.";
    try {
      DistributedOptimizer opt(own, list, options);
      FAIL("expected an error");
    } catch (const InvalidArgumentError& e) {
      if (r == n - 1) CHECK_THAT(e.what(), Catch::Contains("is on meta"));
      else CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(n - 1) + " has"));
    }
  }
  SECTION("bad options") {
    DistributedOptimizerOptions options;
    options.backward_passes_per_step = 0;
    REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, net->named_parameters(), options),
                        Catch::Contains("backward_passes_per_step"));
    options.backward_passes_per_step = 1;
    options.op = Sum;
    options.gradient_predivide_factor = 2;
    REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, net->named_parameters(), options), Catch::Contains("Average"));
  }
}

TEST_CASE("gradient_predivide_factor keeps the average", "[torch][optimizer]") {
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.name_prefix = "predivide.";
  options.gradient_predivide_factor = 4;
  DistributedOptimizer opt(sgd, net->named_parameters(), options);
  net->forward(torch::ones({1, 8}) * (chorus::rank() + 1)).sum().backward();
  opt.synchronize();
  // d(sum)/d(fc2.bias) = 1 on every rank: divided by 4, summed, times 4 / size.
  CHECK(torch::allclose(net->fc2->bias.grad(), torch::ones({4})));
}

TEST_CASE("The loss scaler skips the same steps on every rank", "[torch][loss_scaler]") {
  const int r = chorus::rank(), n = chorus::size();
  Net net = seeded_net();
  // A frozen parameter in the optimizer: not reduced, but checked by the scaler.
  torch::Tensor frozen = torch::zeros({3});
  std::vector<torch::Tensor> params = net->parameters();
  params.push_back(frozen);
  auto sgd = std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1));
  auto named = net->named_parameters();
  std::vector<std::pair<std::string, torch::Tensor>> list;
  for (const auto& item : named) list.emplace_back(item.key(), item.value());
  list.emplace_back("frozen", frozen);
  DistributedOptimizerOptions options;
  options.name_prefix = "scaler.";
  DistributedOptimizer opt(sgd, list, options);
  LossScalerOptions so;
  so.init_scale = 1024;
  so.growth_interval = 2;
  DynamicLossScaler scaler(so);

  auto train_step = [&](bool poison_here) {
    opt.zero_grad();
    scaler.scale(torch::mse_loss(net->forward(torch::ones({2, 8})), torch::zeros({2, 4}))).backward();
    frozen.mutable_grad() = poison_here ? torch::full({3}, INFINITY) : torch::zeros({3});
    return scaler.step(opt);
  };
  CHECK(train_step(false));
  CHECK(scaler.get_scale() == 1024);
  torch::Tensor before = net->fc1->weight.detach().clone();
  CHECK_FALSE(train_step(r == n - 1));  // only the last rank sees inf; every rank skips
  CHECK(scaler.get_scale() == 512);
  CHECK(scaler.skipped_steps() == 1);
  CHECK(torch::equal(net->fc1->weight, before));
  CHECK(train_step(false));
  CHECK(train_step(false));
  CHECK(scaler.get_scale() == 1024);  // two good steps in a row: grown back
  CHECK(torch_test::same_on_all_ranks(net->fc1->weight, "scaler.check"));
  REQUIRE_THROWS_WITH(DynamicLossScaler(LossScalerOptions{0.0}), Catch::Contains("init_scale"));
}

TEST_CASE("A rank that ran no backward still joins the step's allreduces", "[torch][optimizer]") {
  const int r = chorus::rank();
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizer opt(sgd, net->named_parameters(), summing("uneven."));
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    // Step 0: every rank; step 1: rank 0 alone (the others have no data).
    if (step == 0 || r == 0) net->forward(torch::ones({1, 8})).sum().backward();
    opt.step();
    const float expected = step == 0 ? float(chorus::size()) : 1.0f;
    CHECK(torch::allclose(net->fc2->bias.grad(), torch::full({4}, expected)));
  }
}

TEST_CASE("Parameters whose storage was replaced (checkpoint load) keep being reduced", "[torch][optimizer]") {
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizer opt(sgd, net->named_parameters(), summing("set_."));
  {
    torch::NoGradGuard no_grad;
    net->fc2->bias.set_(torch::zeros({4}));  // what Module::load does: a new gradient accumulator
  }
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    net->forward(torch::ones({1, 8})).sum().backward();
    opt.step();
    CHECK(torch::allclose(net->fc2->bias.grad(), torch::full({4}, float(chorus::size()))));
  }
}

TEST_CASE("Without named_parameters: Horovod's names, the same training", "[torch][optimizer]") {
  const int n = chorus::size();
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizer opt(sgd, summing("grad."));
  // Parameter j of group i is "allreduce.noname.<i>.<j>" after the prefix (one group of four).
  CHECK(opt.parameter_names() == std::vector<std::string>{"grad.allreduce.noname.0.0", "grad.allreduce.noname.0.1",
                                                          "grad.allreduce.noname.0.2", "grad.allreduce.noname.0.3"});
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    net->forward(torch::ones({1, 8})).sum().backward();
    opt.step();
    CHECK(torch::allclose(net->fc2->bias.grad(), torch::full({4}, float(n))));
  }
}

TEST_CASE("A parameter frozen after the optimizer was built is reduced as zeros, and again once it thaws",
          "[torch][optimizer]") {
  const int n = chorus::size();
  Net net = seeded_net();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizer opt(sgd, net->named_parameters(), summing("frozen."));
  const torch::Tensor ones = torch::ones({1, 8});
  for (int step = 0; step < 4; ++step) {
    const bool frozen = step == 1 || step == 2;
    net->fc1->weight.requires_grad_(!frozen);  // after step 0's hooks: no accumulator while frozen
    torch::Tensor w1 = net->fc1->weight.detach().clone();
    opt.zero_grad();
    net->forward(ones).sum().backward();
    opt.step();
    CHECK(torch::allclose(net->fc2->bias.grad(), torch::full({4}, float(n))));
    if (frozen) CHECK(torch::equal(net->fc1->weight, w1));  // a zero gradient: plain SGD leaves it
    else CHECK_FALSE(torch::equal(net->fc1->weight, w1));
  }
  REQUIRE(torch_test::same_on_all_ranks(net->fc1->weight.detach().flatten(), "frozen.check"));
}

TEST_CASE("Flat gradients: one buffer after the first step, reduced in place, same result", "[torch][optimizer][flat]") {
  const int r = chorus::rank(), n = chorus::size();
  const int steps = 8;
  Data data(steps * n * 4);
  auto train = [&](bool flat, const std::string& prefix, bool replace_a_gradient) {
    Net net = seeded_net();
    DistributedOptimizerOptions options;
    options.flat_gradients = flat;
    options.name_prefix = prefix;
    DistributedOptimizer opt(sgd_momentum(net), net->named_parameters(), options);
    const RuntimeStats before = runtime().stats();
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      if (flat && !replace_a_gradient && s > 0) {
        // Zeroed where they lie, not set to none (LibTorch 2's default),
        // which would drop the flat layout from the second step on.
        for (const auto& p : net->parameters()) {
          REQUIRE(p.grad().defined());
          CHECK(p.grad().storage().is_alias_of(net->parameters().front().grad().storage()));
          CHECK(p.grad().abs().max().item<float>() == 0);
        }
      }
      if (replace_a_gradient && s == 3) net->fc1->bias.mutable_grad() = torch::zeros({16});  // the user's own tensor
      backward_on(net, data, (s * n + r) * 4, 4);
      opt.step();
      if (flat && s == 0) {
        // Every gradient is a slice of one storage, and together they tile it.
        const auto params = net->parameters();
        int64_t total = 0;
        std::vector<std::pair<const char*, int64_t>> extents;
        for (const auto& p : params) {
          REQUIRE(p.grad().storage().is_alias_of(params.front().grad().storage()));
          extents.emplace_back(static_cast<const char*>(p.grad().data_ptr()), p.grad().numel() * 4);
          total += p.grad().numel() * 4;
        }
        std::sort(extents.begin(), extents.end());
        for (size_t i = 1; i < extents.size(); ++i) CHECK(extents[i].first == extents[i - 1].first + extents[i - 1].second);
        CHECK(static_cast<int64_t>(params.front().grad().storage().nbytes()) == total);
        // In the shared-memory arena, whenever the job has one (all ranks on one host).
        const bool arenas = n > 1 && chorus::local_size() == n && runtime().options().shm_arena_bytes > 0 &&
                            runtime().options().allreduce_algorithm != AllreduceAlgorithm::kRing &&
                            runtime().options().allreduce_algorithm != AllreduceAlgorithm::kMpi;
        CHECK(runtime().in_shared_host(params.front().grad().data_ptr(), total) == arenas);
      }
    }
    const RuntimeStats after = runtime().stats();
    return std::make_tuple(std::move(net), after.in_place_fused_allreduce_ops - before.in_place_fused_allreduce_ops,
                           after.shm_zero_copy_ops - before.shm_zero_copy_ops);
  };
  auto [flat, flat_in_place, flat_zero_copy] = train(true, "flat.on.", false);
  auto [copied, copied_in_place, copied_zero_copy] = train(false, "flat.off.", false);
  auto [replaced, replaced_in_place, replaced_zero_copy] = train(true, "flat.replaced.", true);
  CHECK(torch_test::max_parameter_difference(*flat, *copied) < 1e-6);
  CHECK(torch_test::max_parameter_difference(*flat, *replaced) < 1e-6);
  CHECK(copied_in_place == 0);
  // Four small gradients produced within microseconds fuse; a fused group
  // that is back to back in the layout is reduced where it lies.
  if (n > 1) CHECK(flat_in_place > 0);
  // Flat gradients live in the shared-memory arena: with shared memory,
  // their allreduces after the first step read the other ranks' gradients
  // where they lie; copied (per-tensor) gradients never do.
  CHECK(copied_zero_copy == 0);
  if (n > 1 && chorus::local_size() == n && runtime().options().shm_arena_bytes > 0 &&
      runtime().options().allreduce_algorithm == AllreduceAlgorithm::kAuto) {
    CHECK(flat_zero_copy > 0);
  }
  INFO("in place: flat " << flat_in_place << ", replaced " << replaced_in_place << "; zero-copy: flat "
                         << flat_zero_copy << ", replaced " << replaced_zero_copy);
  CHECK(!replaced->fc1->bias.grad().storage().is_alias_of(replaced->fc1->weight.grad().storage()));
}

namespace {

// Adasum of two gradients in double: (1 - a.b/2|a|^2) a + (1 - a.b/2|b|^2) b.
torch::Tensor adasum_pair(const torch::Tensor& a, const torch::Tensor& b) {
  const double dot = (a * b).sum().item<double>(), aa = (a * a).sum().item<double>(), bb = (b * b).sum().item<double>();
  return (aa > 0 ? 1 - dot / (2 * aa) : 1) * a + (bb > 0 ? 1 - dot / (2 * bb) : 1) * b;
}

torch::Tensor adasum_balanced(const std::vector<torch::Tensor>& g, size_t first, size_t n) {
  if (n == 1) return g[first];
  return adasum_pair(adasum_balanced(g, first, n / 2), adasum_balanced(g, first + n / 2, n / 2));
}

// The tree of docs/api.md: ranks past the largest power of two p fold into rank - p first.
torch::Tensor adasum_tree(std::vector<torch::Tensor> g) {
  size_t p = 1;
  while (p * 2 <= g.size()) p *= 2;
  for (size_t r = 0; r + p < g.size(); ++r) g[r] = adasum_pair(g[r], g[r + p]);
  return adasum_balanced(g, 0, p);
}

// SGD with momentum where each parameter's gradient is the Adasum tree of the
// ranks' gradients (one process computes every rank's), against the
// DistributedOptimizer with op Adasum in `set` (the tree over its members
// only); the largest parameter difference.
double adasum_vs_reference(std::shared_ptr<Compression> compression, const ProcessSet& set = ProcessSet()) {
  const int r = set.rank_of(chorus::rank()), steps = 4;
  const int n = set.is_global() ? chorus::size() : static_cast<int>(set.ranks().size());
  const int64_t batch = 4;
  Data data(steps * n * batch);
  Net single = seeded_net();
  auto single_opt = sgd_momentum(single);
  for (int s = 0; s < steps; ++s) {
    std::vector<std::vector<torch::Tensor>> grads(single->parameters().size());
    for (int k = 0; k < n; ++k) {
      single_opt->zero_grad();
      backward_on(single, data, (s * n + k) * batch, batch);
      for (size_t i = 0; i < grads.size(); ++i) grads[i].push_back(single->parameters()[i].grad().to(torch::kDouble));
    }
    for (size_t i = 0; i < grads.size(); ++i) {
      single->parameters()[i].mutable_grad() = adasum_tree(grads[i]).to(torch::kFloat);
    }
    single_opt->step();
  }
  Net net = seeded_net();
  DistributedOptimizerOptions options;
  options.op = Adasum;
  options.compression = compression;
  options.process_set = set;
  options.name_prefix = std::string("adasum.") + (compression ? compression->name() : "none") + ".set" +
                        std::to_string(set.id()) + ".";
  DistributedOptimizer opt(sgd_momentum(net), net->named_parameters(), options);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    backward_on(net, data, (s * n + r) * batch, batch);
    opt.step();
  }
  const torch::Tensor mine = torch::cat({net->fc1->weight.flatten(), net->fc2->bias}).unsqueeze(0);
  const torch::Tensor members = allgather(mine, options.name_prefix + "check", set);  // equal within the set
  REQUIRE(torch::equal(members, mine.expand_as(members)));
  return torch_test::max_parameter_difference(*single, *net);
}

}  // namespace

TEST_CASE("DistributedOptimizer with op Adasum equals the Adasum tree of each parameter's gradients",
          "[torch][optimizer][adasum]") {
  CHECK(adasum_vs_reference(nullptr) < 1e-5);
  const double fp16 = adasum_vs_reference(Compression::fp16());  // widened to float32 in the core
  INFO("fp16 " << fp16);
  CHECK(fp16 < 1e-3);
  CHECK(fp16 > 0);
}

// Two process sets (all ranks but the last, and the last): each set's tree
// runs over its own members (at 3 ranks a 2-member tree, not the 3-rank one).
TEST_CASE("DistributedOptimizer with op Adasum inside a process set combines its members only",
          "[torch][optimizer][adasum][process_set]") {
  const int n = chorus::size(), me = chorus::rank();
  if (n < 2) return;  // needs two sets
  std::vector<int> first;
  for (int r = 0; r + 1 < n; ++r) first.push_back(r);
  const ProcessSet a = add_process_set(first), b = add_process_set({n - 1});
  CHECK(adasum_vs_reference(nullptr, me < n - 1 ? a : b) < 1e-5);
  barrier();
  remove_process_set(a);
  remove_process_set(b);
}
