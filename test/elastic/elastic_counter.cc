// An elastic job's worker for the tests (test/elastic/*.sh): a "model" of
// 1024 doubles trained for --steps steps; each step allreduces a gradient
// every rank computes alike (so the result does not depend on the world's
// size) and commits. Killing ranks, adding hosts, or any number of resets
// must leave every survivor with exactly the model of --steps committed
// steps: `FINAL` lines carry the step count and a checksum the test checks
// against the closed form, and every rank's must be equal.
//   STEP <step> rank=<r> size=<s> t=<seconds since epoch>   after each step
//   RESET rank=<r> size=<s> t=<...>                          after each reset
//   RESTORE rank=<r> step=<committed step>                   on a rollback to the last commit
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "chorus/elastic.h"

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct CounterState : chorus::elastic::State {
  std::vector<double> model = std::vector<double>(1024, 0.0);
  int64_t step = 0;
  std::vector<double> saved_model = model;
  int64_t saved_step = 0;

  void save() override {
    saved_model = model;
    saved_step = step;
  }
  void restore() override {
    model = saved_model;
    step = saved_step;
    std::printf("RESTORE rank=%d step=%lld\n", chorus::rank(), static_cast<long long>(step));
    std::fflush(stdout);
  }
  // Rank 0's model and step to every rank.
  void sync() override {
    auto m = std::make_shared<chorus::HostTensorView>(model.data(), chorus::DataType::kFloat64,
                                                      chorus::TensorShape({static_cast<int64_t>(model.size())}));
    chorus::broadcast_async("state.model", m, 0).wait();
    auto s = std::make_shared<chorus::HostTensorView>(&step, chorus::DataType::kInt64, chorus::TensorShape({1}));
    chorus::broadcast_async("state.step", s, 0).wait();
    save();
  }
};

// The gradient of step `k`: the same on every rank.
void gradient(int64_t k, std::vector<double>* g) {
  for (size_t i = 0; i < g->size(); ++i) (*g)[i] = static_cast<double>((k % 7) + 1) * static_cast<double>(i % 5);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 100;
  double step_seconds = 0.05;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--step-seconds") == 0) step_seconds = std::atof(argv[i + 1]);
  }
  chorus::init();
  CounterState state;
  state.register_reset_callbacks({[] {
    std::printf("RESET rank=%d size=%d t=%.3f\n", chorus::rank(), chorus::size(), now_seconds());
    std::fflush(stdout);
  }});
  std::vector<double> g(state.model.size());
  chorus::elastic::run(state, [&] {
    for (; state.step < steps;) {
      gradient(state.step, &g);
      auto t = std::make_shared<chorus::HostTensorView>(g.data(), chorus::DataType::kFloat64,
                                                        chorus::TensorShape({static_cast<int64_t>(g.size())}));
      chorus::allreduce_async("grad", t, t).wait();  // average: the same value
      for (size_t i = 0; i < g.size(); ++i) state.model[i] += g[i];
      ++state.step;
      std::printf("STEP %lld rank=%d size=%d t=%.3f\n", static_cast<long long>(state.step), chorus::rank(),
                  chorus::size(), now_seconds());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds));
      state.commit();
    }
  });
  double expected = 0, sum = 0;
  for (int64_t k = 0; k < steps; ++k) expected += static_cast<double>((k % 7) + 1);
  for (size_t i = 0; i < state.model.size(); ++i) sum += state.model[i] / static_cast<double>(i % 5 == 0 ? 1 : i % 5);
  // model[i] = expected * (i % 5): every nonzero column divided back gives `expected`.
  const double want = expected * static_cast<double>(state.model.size() - (state.model.size() + 4) / 5);
  std::printf("FINAL rank=%d size=%d steps=%lld checksum=%.1f %s\n", chorus::rank(), chorus::size(),
              static_cast<long long>(state.step), sum, sum == want ? "OK" : "WRONG");
  std::fflush(stdout);
  chorus::shutdown();
  return sum == want ? 0 : 3;
}
