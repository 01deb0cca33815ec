// An elastic job's LibTorch worker (test/elastic/elastic_torch.sh): a small
// MLP trained with SGD + momentum through DistributedOptimizer, its state in
// a TorchState (model, optimizer, the "step" value), a commit every step.
// Every rank computes the same batch, so the averaged gradient and the
// whole trajectory do not depend on the world's size: at the end each rank
// trains a copy alone, without Chorus, and checks it lands on the same
// parameters ("FINAL ... OK"); a committed step lost or done twice, or
// momentum not carried over a reset, lands elsewhere ("WRONG").
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "chorus/torch.h"

namespace {

struct Net : torch::nn::Module {
  Net() {
    torch::manual_seed(1);
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(torch::tanh(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

torch::Tensor batch_x(int64_t step) {
  return torch::sin(torch::arange(64 * 16, torch::kFloat32).reshape({64, 16}) * 0.01f * static_cast<float>(step + 1));
}

void one_step(Net& net, const std::function<void()>& zero, const std::function<void()>& step, int64_t k) {
  zero();
  torch::Tensor x = batch_x(k);
  torch::Tensor loss = (net.forward(x) - x.sum(1, true) * 0.1f).pow(2).mean();
  loss.backward();
  step();
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoll(argv[i + 1]);
  }
  torch::set_num_threads(1);
  chorus::init();
  Net net;
  auto sgd = std::make_shared<torch::optim::SGD>(net.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  chorus::DistributedOptimizer optimizer(sgd, net.named_parameters());
  chorus::TorchState state(net, optimizer);
  state.value("step") = 0;
  chorus::elastic::run(state, [&] {
    for (int64_t& k = state.value("step"); k < steps;) {
      one_step(
          net, [&] { optimizer.zero_grad(); }, [&] { optimizer.step(); }, k);
      ++k;
      std::printf("STEP %lld rank=%d size=%d t=%.3f\n", static_cast<long long>(k), chorus::rank(), chorus::size(),
                  now_seconds());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      state.commit();
    }
  });
  // The same training alone.
  Net alone;
  torch::optim::SGD plain(alone.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (int64_t k = 0; k < steps; ++k)
    one_step(
        alone, [&] { plain.zero_grad(); }, [&] { plain.step(); }, k);
  double diff = 0, sum = 0;
  for (size_t i = 0; i < net.parameters().size(); ++i) {
    diff = std::max(diff, (net.parameters()[i] - alone.parameters()[i]).abs().max().item<double>());
    sum += net.parameters()[i].sum().item<double>();
  }
  const bool ok = diff < 1e-4;
  std::printf("FINAL rank=%d size=%d steps=%lld sum=%.6f maxdiff=%.2e %s\n", chorus::rank(), chorus::size(),
              static_cast<long long>(state.value("step")), sum, diff, ok ? "OK" : "WRONG");
  std::fflush(stdout);
  chorus::shutdown();
  return ok ? 0 : 3;
}
