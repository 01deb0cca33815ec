// Timeline control at run time under mpirun: a timeline started at step 3
// and stopped after step 5 of a training loop holds exactly those steps'
// markers and their collectives, as valid JSON; the error cases.
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "torch_test_util.h"

using namespace chorus;

namespace {

// A strict JSON checker (RFC 8259 values), enough to say a trace parses.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : s_(text) {}
  bool valid() { return value() && (skip(), i_ == s_.size()); }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) { return skip(), i_ < s_.size() && s_[i_] == c ? (++i_, true) : false; }
  bool literal(const char* word) {
    const std::string w(word);
    return s_.compare(i_, w.size(), w) == 0 ? (i_ += w.size(), true) : false;
  }
  bool string() {
    if (!eat('"')) return false;
    for (; i_ < s_.size(); ++i_) {
      const unsigned char c = s_[i_];
      if (c == '"') return ++i_, true;
      if (c < 0x20) return false;
      if (c == '\\' && ++i_ >= s_.size()) return false;
    }
    return false;
  }
  bool number() {
    const size_t start = i_;
    while (i_ < s_.size() && std::strchr("+-0123456789.eE", s_[i_])) ++i_;
    return i_ > start;
  }
  template <typename Item>
  bool sequence(char close, Item item) {
    if (eat(close)) return true;
    do {
      if (!item()) return false;
    } while (eat(','));
    return eat(close);
  }
  bool value() {
    skip();
    if (eat('{')) return sequence('}', [this] { return string() && eat(':') && value(); });
    if (eat('[')) return sequence(']', [this] { return value(); });
    if (i_ < s_.size() && s_[i_] == '"') return string();
    return literal("true") || literal("false") || literal("null") || number();
  }
  const std::string& s_;
  size_t i_ = 0;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One path for the whole job (rank 0's pid), this rank's file under it.
std::string job_path(const std::string& stem) {
  const torch::Tensor pid = broadcast(torch::tensor({static_cast<int64_t>(getpid())}), 0, "timeline.test.pid");
  return "/tmp/chorus_" + stem + "_" + std::to_string(pid.item<int64_t>()) + ".json";
}
std::string file_of_rank(const std::string& path) {
  return chorus::rank() == 0 ? path : path + ".rank" + std::to_string(chorus::rank());
}

}  // namespace

TEST_CASE("A timeline started at step 3 and stopped after step 5 holds exactly those steps", "[timeline]") {
  const std::string path = job_path("timeline_steps");
  torch::manual_seed(1);
  torch::nn::Linear net(6, 2);
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.name_prefix = "traced.";
  DistributedOptimizer opt(sgd, net->named_parameters(), options);
  for (int step = 1; step <= 7; ++step) {
    if (step == 3) start_timeline(path);
    torch::mse_loss(net->forward(torch::randn({4, 6})), torch::zeros({4, 2})).backward();
    opt.step();
    opt.zero_grad();
    if (step == 5) CHECK(stop_timeline());
  }
  CHECK(opt.steps() == 7);
  const std::string trace = slurp(file_of_rank(path));
  std::remove(file_of_rank(path).c_str());
  CHECK(JsonChecker(trace).valid());
  CHECK_THAT(trace, Catch::Contains("\"name\":\"steps traced.\""));  // the row
  for (int step = 1; step <= 7; ++step) {
    INFO("step " << step);
    const bool traced = step >= 3 && step <= 5;
    CHECK((trace.find("\"name\":\"step " + std::to_string(step) + "\"") != std::string::npos) == traced);
  }
  CHECK_THAT(trace, Catch::Contains("\"name\":\"traced.weight\"") && Catch::Contains("\"name\":\"traced.bias\""));
  CHECK_THAT(trace, Catch::Contains("NEGOTIATE_ALLREDUCE") && Catch::Contains("\"name\":\"ALLREDUCE"));
}

TEST_CASE("Timeline control: a second start is refused, a stop without start does nothing", "[timeline]") {
  const std::string path = job_path("timeline_errors");
  CHECK_FALSE(stop_timeline());
  CHECK_THROWS_AS(start_timeline(""), InvalidArgumentError);
  CHECK_THROWS_WITH(start_timeline("/nonexistent-dir/trace.json"), Catch::Contains("/nonexistent-dir/trace.json"));
  start_timeline(path, /*mark_cycles=*/true);
  CHECK_THROWS_AS(start_timeline(path + ".other"), PreconditionError);
  CHECK_THROWS_WITH(start_timeline(path + ".other"), Catch::Contains("already being written to '" + file_of_rank(path)));
  // The background thread marks a cycle after it ran: the second allreduce
  // runs in a later cycle, so the first one's mark is written by then.
  allreduce(torch::ones({3}), "timeline.test.cycle");
  allreduce(torch::ones({3}), "timeline.test.cycle");
  CHECK(stop_timeline());  // also when a faster rank already ended the job
  CHECK_FALSE(stop_timeline());
  const std::string trace = slurp(file_of_rank(path));
  std::remove(file_of_rank(path).c_str());
  CHECK(JsonChecker(trace).valid());
  CHECK_THAT(trace, Catch::Contains("\"name\":\"CYCLE_START\",\"ph\":\"i\""));
  CHECK_THAT(trace, Catch::Contains("\"name\":\"timeline.test.cycle\""));
}

// A DistributedOptimizer inside a process set (the first and second half of
// the ranks) marks its steps in the set's own timeline file, beside the
// set's collectives; the global file holds neither.
TEST_CASE("The steps of a DistributedOptimizer in a process set are in the set's timeline", "[timeline][process_set]") {
  const std::string path = job_path("timeline_sets");
  const int n = chorus::size(), me = chorus::rank(), half = (n + 1) / 2;
  std::vector<int> first, second;
  for (int r = 0; r < n; ++r) (r < half ? first : second).push_back(r);
  const ProcessSet a = add_process_set(first);
  const ProcessSet b = second.empty() ? a : add_process_set(second);
  const ProcessSet& set = me < half ? a : b;
  torch::manual_seed(2);
  torch::nn::Linear net(5, 2);
  auto sgd = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.name_prefix = "inset.";
  options.process_set = set;
  DistributedOptimizer opt(sgd, net->named_parameters(), options);
  start_timeline(path);
  for (int step = 1; step <= 2; ++step) {
    torch::mse_loss(net->forward(torch::randn({3, 5})), torch::zeros({3, 2})).backward();
    opt.step();
    opt.zero_grad();
  }
  CHECK(stop_timeline());
  const int set_rank = set.rank_of(me);
  const std::string set_file = path + ".process_set" + std::to_string(set.id()) +
                               (set_rank == 0 ? "" : ".rank" + std::to_string(set_rank));
  const std::string set_trace = slurp(set_file), global_trace = slurp(file_of_rank(path));
  std::remove(set_file.c_str());
  std::remove(file_of_rank(path).c_str());
  CHECK(JsonChecker(set_trace).valid());
  CHECK(JsonChecker(global_trace).valid());
  CHECK_THAT(set_trace, Catch::Contains("\"name\":\"steps inset.\"") && Catch::Contains("\"name\":\"step 2\"") &&
                            Catch::Contains("\"name\":\"inset.weight\""));
  CHECK_THAT(global_trace, !Catch::Contains("\"name\":\"step 1\"") && !Catch::Contains("\"name\":\"inset.weight\""));
  barrier();
  remove_process_set(a);
  if (!second.empty()) remove_process_set(b);
}
