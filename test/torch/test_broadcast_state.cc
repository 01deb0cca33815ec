// Broadcasting state under mpirun: ranks started from different seeds end
// up identical (parameters, buffers, optimizer state, param-group options),
// also after rank 0 alone took steps; objects of every supported kind.
#include <map>
#include <optional>
#include <unordered_map>

#include "torch_test_util.h"

using namespace chorus;

namespace {

struct BnNetImpl : torch::nn::Module {
  BnNetImpl() {
    fc = register_module("fc", torch::nn::Linear(6, 5));
    bn = register_module("bn", torch::nn::BatchNorm1d(5));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward(fc->forward(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(BnNet);

BnNet net_seeded_by_rank() {
  torch::manual_seed(100 + chorus::rank());
  BnNet net;
  net->forward(torch::randn({8, 6}));  // running statistics differ per rank too
  return net;
}

torch::Tensor all_values(const torch::nn::Module& m) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : m.parameters()) parts.push_back(p.detach().flatten().to(torch::kFloat64));
  for (const auto& b : m.buffers()) parts.push_back(b.detach().flatten().to(torch::kFloat64));
  return torch::cat(parts);
}

void train_alone_on_root(BnNet& net, torch::optim::Optimizer& opt, int steps) {
  if (chorus::rank() != 0) return;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    net->forward(torch::randn({8, 6})).pow(2).mean().backward();
    opt.step();
  }
}

}  // namespace

TEST_CASE("broadcast_parameters makes differently seeded ranks identical", "[torch][broadcast]") {
  BnNet net = net_seeded_by_rank();
  REQUIRE((chorus::size() == 1 || !torch_test::same_on_all_ranks(all_values(*net), "bp.before")));
  torch::Tensor root_values = broadcast(all_values(*net), 0, "bp.root_values");
  broadcast_parameters(*net, 0);
  CHECK(torch::equal(all_values(*net), root_values));
  CHECK(torch_test::same_on_all_ranks(all_values(*net), "bp.after"));
  // From another root, named parameters only.
  const int root = chorus::size() - 1;
  net->fc->weight.data().fill_(chorus::rank());
  broadcast_parameters(net->named_parameters(), root);
  CHECK(net->fc->weight.eq(root).all().item<bool>());
  CHECK(net->fc->weight.requires_grad());
}

TEST_CASE("broadcast_parameters refuses lists that differ across ranks", "[torch][broadcast][errors]") {
  const int odd = chorus::size() - 1;
  std::vector<std::pair<std::string, torch::Tensor>> list = {{"a", torch::ones({2})}};
  if (chorus::rank() == odd) list.emplace_back("b", torch::ones({3}));
  try {
    broadcast_parameters(list, 0);
    FAIL("expected an error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(odd) + " has 2"));
  }
  // A root outside the job on the last rank only: every rank fails, naming it.
  const std::vector<std::pair<std::string, torch::Tensor>> same = {{"c", torch::ones({2})}};
  const int size = chorus::size();
  try {
    broadcast_parameters(same, chorus::rank() == odd ? size : 0);
    FAIL("expected an error");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("'broadcast_parameters.c'") && Catch::Contains("root rank") &&
                             Catch::Contains(std::to_string(size) + " (outside 0.." + std::to_string(size - 1) + ")"));
  }
}

TEST_CASE("broadcast_optimizer_state: SGD momentum after rank 0 trained alone", "[torch][broadcast]") {
  BnNet net = net_seeded_by_rank();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::manual_seed(5);
  train_alone_on_root(net, *sgd, 3);
  if (chorus::rank() == 0) static_cast<torch::optim::SGDOptions&>(sgd->param_groups()[0].options()).lr(0.123).momentum(0.8);
  broadcast_parameters(*net, 0);
  broadcast_optimizer_state(*sgd, 0);
  auto& o = static_cast<torch::optim::SGDOptions&>(sgd->param_groups()[0].options());
  CHECK(o.lr() == Approx(0.123));
  CHECK(o.momentum() == Approx(0.8));
  CHECK(sgd->state().size() == net->parameters().size());  // created where it did not exist
  // One more identical step everywhere keeps the ranks identical.
  torch::manual_seed(6);
  sgd->zero_grad();
  net->forward(torch::randn({8, 6})).pow(2).mean().backward();
  sgd->step();
  CHECK(torch_test::same_on_all_ranks(all_values(*net), "bos.sgd.after"));
}

TEST_CASE("broadcast_optimizer_state: Adam step counts and moments", "[torch][broadcast]") {
  BnNet net = net_seeded_by_rank();
  auto adam = std::make_shared<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(0.01).betas({0.8, 0.9}));
  torch::manual_seed(5);
  train_alone_on_root(net, *adam, 4);
  if (chorus::rank() != 0) static_cast<torch::optim::AdamOptions&>(adam->param_groups()[0].options()).betas({0.1, 0.2});
  broadcast_parameters(*net, 0);
  broadcast_optimizer_state(*adam, 0);
  auto& o = static_cast<torch::optim::AdamOptions&>(adam->param_groups()[0].options());
  CHECK(std::get<0>(o.betas()) == Approx(0.8));
  CHECK(std::get<1>(o.betas()) == Approx(0.9));
  for (const auto& p : net->parameters()) {
    auto& st = static_cast<torch::optim::AdamParamState&>(*adam->state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
    CHECK(st.step() == 4);
    CHECK(torch_test::same_on_all_ranks(st.exp_avg_sq(), "bos.adam.moment"));
  }
  torch::manual_seed(6);
  adam->zero_grad();
  net->forward(torch::randn({8, 6})).pow(2).mean().backward();
  adam->step();
  CHECK(torch_test::same_on_all_ranks(all_values(*net), "bos.adam.after"));
}

TEST_CASE("broadcast_optimizer_state: AdamW, RMSprop, Adagrad", "[torch][broadcast]") {
  using Make = std::function<std::shared_ptr<torch::optim::Optimizer>(BnNet&)>;
  const int r = chorus::rank();
  // Options differ per rank on purpose: the root's must win.
  const std::vector<std::pair<std::string, Make>> kinds = {
      {"adamw", [&](BnNet& n) { return std::make_shared<torch::optim::AdamW>(n->parameters(), torch::optim::AdamWOptions(0.01 + r)); }},
      {"rmsprop", [&](BnNet& n) { return std::make_shared<torch::optim::RMSprop>(n->parameters(), torch::optim::RMSpropOptions(0.01 + r).momentum(0.5)); }},
      {"adagrad", [&](BnNet& n) { return std::make_shared<torch::optim::Adagrad>(n->parameters(), torch::optim::AdagradOptions(0.1 + r)); }},
  };
  for (const auto& [kind, make] : kinds) {
    BnNet net = net_seeded_by_rank();
    auto opt = make(net);
    torch::manual_seed(5);
    train_alone_on_root(net, *opt, 2);
    broadcast_parameters(*net, 0);
    broadcast_optimizer_state(*opt, 0);
    CHECK(opt->param_groups()[0].options().get_lr() == Approx(kind == "adagrad" ? 0.1 : 0.01));
    torch::manual_seed(6);
    opt->zero_grad();
    net->forward(torch::randn({8, 6})).pow(2).mean().backward();
    opt->step();
    INFO(kind);
    CHECK(torch_test::same_on_all_ranks(all_values(*net), "bos." + kind + ".after"));
  }
}

TEST_CASE("broadcast_optimizer_state drops state the root does not have", "[torch][broadcast]") {
  BnNet net = net_seeded_by_rank();
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  if (chorus::rank() != 0) {
    sgd->zero_grad();
    net->forward(torch::randn({8, 6})).pow(2).mean().backward();
    sgd->step();
  }
  broadcast_optimizer_state(*sgd, 0);
  CHECK(sgd->state().empty());
}

TEST_CASE("broadcast_object: numbers, structs, strings, tensors", "[torch][broadcast]") {
  const int r = chorus::rank();
  CHECK(broadcast_object<int64_t>(r == 0 ? 41 : -1, 0, "obj.epoch") == 41);
  struct Config { double lr; int batch; };
  Config c = broadcast_object(r == 1 ? Config{0.5, 64} : Config{0, 0}, 1 % chorus::size(), "obj.config");
  CHECK(c.batch == (chorus::size() > 1 ? 64 : 0));
  CHECK(broadcast_object<std::string>(r == 0 ? std::string("resume at epoch 3") : std::string("x"), 0) ==
        "resume at epoch 3");
  CHECK(broadcast_object<std::string>(std::string(), 0, "obj.empty").empty());
  CHECK(broadcast_object<int64_t>(r == 0 ? 7 : r) == 7);  // root_rank 0 by default, as Horovod
  torch::Tensor t = broadcast_object<torch::Tensor>(torch::full({2, 2}, r), 0, "obj.tensor");
  CHECK(t.eq(0).all().item<bool>());
}

TEST_CASE("broadcast_object: standard containers, nested, and generic dicts", "[torch][broadcast]") {
  const int r = chorus::rank(), root = chorus::size() - 1;
  const bool is_root = r == root;
  using Nested = std::map<std::string, std::vector<std::pair<int, std::string>>>;
  const Nested mine = is_root ? Nested{{"a", {{1, "one"}, {2, ""}}}, {"empty", {}}} : Nested{{"x", {{r, "other"}}}};
  CHECK(broadcast_object(mine, root, "obj.nested") == Nested{{"a", {{1, "one"}, {2, ""}}}, {"empty", {}}});
  // A vector of numbers goes as one block; its length may differ per rank.
  const std::vector<float> floats = broadcast_object(std::vector<float>(is_root ? 1000 : r, 0.5f), root);
  CHECK(floats == std::vector<float>(1000, 0.5f));
  CHECK(broadcast_object(std::vector<bool>{is_root, !is_root, true}, root) == std::vector<bool>{true, false, true});
  const std::unordered_map<int, std::optional<double>> u =
      broadcast_object(std::unordered_map<int, std::optional<double>>{{7, is_root ? std::optional(2.5) : std::nullopt},
                                                                      {8, std::nullopt}},
                       root);
  CHECK(u.at(7) == 2.5);
  CHECK(!u.at(8).has_value());
  std::vector<torch::Tensor> tensors = broadcast_object(std::vector<torch::Tensor>{torch::full({3}, r)}, root);
  CHECK(torch::equal(tensors.at(0), torch::full({3}, root)));
  // Horovod's test object: {'hello': 123, 0: [1, 2]}, as a generic dict.
  c10::impl::GenericDict dict(c10::AnyType::get(), c10::AnyType::get());
  dict.insert("hello", is_root ? 123 : -1);
  dict.insert(0, c10::List<int64_t>({1, 2}));
  const c10::impl::GenericDict got = broadcast_object(c10::IValue(dict), root, "obj.dict").toGenericDict();
  CHECK(got.at("hello").toInt() == 123);
  CHECK(got.at(0).toIntVector() == std::vector<int64_t>{1, 2});
}

TEST_CASE("broadcast_object: a rank naming another type gets an error, not garbage", "[torch][broadcast]") {
  using chorus::torch_object::from_bytes;
  using chorus::torch_object::to_bytes;
  CHECK_THROWS_WITH(from_bytes<double>(to_bytes(int32_t(1))),
                    Catch::Contains("4 bytes for a value of 8") && Catch::Contains("same type"));
  CHECK_THROWS_AS(from_bytes<std::vector<double>>(to_bytes(std::vector<int32_t>{1, 2, 3})), InvalidArgumentError);
  CHECK_THROWS_AS(from_bytes<std::vector<std::string>>(std::string(3, 'x')), InvalidArgumentError);
  using IntPair = std::pair<int, int>;
  using WidePair = std::pair<int, int64_t>;
  CHECK_THROWS_WITH(from_bytes<IntPair>(to_bytes(WidePair{1, 2})), Catch::Contains("8 bytes for a value of 4"));
  CHECK_THROWS_WITH(from_bytes<std::vector<int>>(to_bytes(std::vector<int>{1}) + "z"), Catch::Contains("left over"));
  CHECK_THROWS_WITH(from_bytes<torch::Tensor>(to_bytes(int64_t(7))), Catch::Contains("not a torch::save archive"));
  CHECK_THROWS_WITH(from_bytes<c10::IValue>(to_bytes(std::string("xyz"))), Catch::Contains("not a pickled value"));
}
