// Autotune (CHORUS_AUTOTUNE): the search is a function of the scores it is
// given; the tuner's samples and its CSV log; the settings travel in the
// response lists, and every rank applies each change before the same
// negotiation round.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loopback_job.h"
#include "negotiation/messages.h"
#include "tuning/autotuner.h"
#include "tuning/parameter_search.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;

namespace {

TuningGrid small_grid() {
  TuningGrid g;
  g.fusion_threshold_bytes = {1000, 2000};
  g.fusion_wait_us = {0, 10};
  g.cycle_time_ms = {1};
  return g;
}

// Runs the search to the end, scoring each sample with score(point, sample
// number within its trial); returns the points measured, in order.
template <class Score>
std::vector<TuningPoint> drive(ParameterSearch& s, Score score) {
  std::vector<TuningPoint> measured;
  for (int guard = 0; !s.done() && guard < 1000; ++guard) {
    if (measured.empty() || !(measured.back() == s.current())) measured.push_back(s.current());
    s.add_sample(score(s.current(), guard));
  }
  return measured;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST_CASE("The search walks one knob at a time and keeps each knob's best median", "[autotune]") {
  const TuningPoint start{2000, 10, 1};
  ParameterSearch s(start, small_grid(), 3, 2);
  REQUIRE(s.current() == start);
  REQUIRE(s.trial_index() == -1);
  // The threshold of 1000 and the wait of 0 score best; every third sample
  // is a wild outlier that only the median ignores.
  const auto measured = drive(s, [](const TuningPoint& p, int n) {
    const double base = (p.fusion_threshold_bytes == 1000 ? 100 : 50) + (p.fusion_wait_us == 0 ? 20 : 0);
    return n % 3 == 0 ? (base == 120 ? 1.0 : 1e9) : base;
  });
  const std::vector<TuningPoint> want = {start,          {1000, 10, 1}, {2000, 10, 1}, {1000, 0, 1},
                                         {1000, 10, 1}, {1000, 0, 1}};
  REQUIRE(measured == want);  // warmup, two thresholds, two waits, the one cycle time
  REQUIRE(s.trials().size() == 5);
  REQUIRE(s.best() == TuningPoint{1000, 0, 1});
  REQUIRE(s.best_score() == 120);
  REQUIRE(s.current() == s.best());
  REQUIRE(s.trials()[0].samples.size() == 3);
  REQUIRE_FALSE(s.add_sample(1));  // done: nothing changes any more
}

TEST_CASE("A tie keeps the knob's value; a starting value off the grid is tried too", "[autotune]") {
  ParameterSearch s({1500, 10, 1}, small_grid(), 1, 0);
  const auto measured = drive(s, [](const TuningPoint&, int) { return 7.0; });
  REQUIRE(measured.front() == TuningPoint{1000, 10, 1});
  REQUIRE(s.trials().size() == 3 + 2 + 1);  // 1000, 1500, 2000; 0, 10; 1
  REQUIRE(s.best() == TuningPoint{1500, 10, 1});
  REQUIRE(median({3, 1, 2}) == 2);
  REQUIRE(median({4, 1, 2, 3}) == 2.5);
}

TEST_CASE("The tuner samples bytes over time and logs each trial as CSV", "[autotune]") {
  const std::string path = "autotune_unit_test.csv";
  RuntimeOptions o;
  o.autotune_sample_ms = 10;
  o.autotune_log_path = path;
  Autotuner tuner(o, ParameterSearch({2000, 10, 1}, small_grid(), 1, 1));
  REQUIRE(tuner.warning().empty());
  using std::chrono::milliseconds;
  const Autotuner::Clock::time_point t0{};
  REQUIRE_FALSE(tuner.observe(0, t0, true));                         // starts the first sample
  REQUIRE_FALSE(tuner.observe(500, t0 + milliseconds(5), true));    // too early
  const auto first = tuner.observe(1000, t0 + milliseconds(20), true);  // the warmup sample, discarded: trial 0 begins
  REQUIRE(first);
  REQUIRE(first->trial == 0);
  REQUIRE(first->fusion_threshold_bytes == 1000);
  REQUIRE_FALSE(tuner.observe(1000, t0 + milliseconds(40), true));   // no bytes moved: goes on
  REQUIRE_FALSE(tuner.observe(2000, t0 + milliseconds(50), false));  // mid-burst: a step would be cut
  const auto next = tuner.observe(3000, t0 + milliseconds(60), true);  // trial 0's sample: 2000 B in 40 ms
  REQUIRE(next);
  REQUIRE(next->trial == 1);
  REQUIRE(next->fusion_threshold_bytes == 2000);
  const auto late = tuner.observe(4000, t0 + milliseconds(110), false);  // mid-burst, but 4x the length: ends
  REQUIRE(late);
  REQUIRE(late->trial == 2);
  int64_t bytes = 4000;
  std::optional<TunedSettings> last;
  for (int i = 4; !tuner.done(); ++i) last = tuner.observe(bytes += 1000, t0 + milliseconds(20 * i), true);
  REQUIRE(last->trial == -1);  // the final choice
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 1 + 5 + 1);
  REQUIRE(lines[0] == "trial,fusion_threshold_bytes,fusion_wait_us,cycle_time_ms,bytes_per_second,samples");
  REQUIRE(lines[1] == "0,1000,10,1,50000,50000");
  REQUIRE(lines[2] == "1,2000,10,1,20000,20000");  // 1000 B in 50 ms
  REQUIRE(lines[6].rfind("final,", 0) == 0);
  std::remove(path.c_str());
  Autotuner unwritable([] {
    RuntimeOptions bad;
    bad.autotune_log_path = "/nonexistent-dir/autotune.csv";
    return bad;
  }(), ParameterSearch({1, 1, 1}, small_grid(), 1, 0));
  REQUIRE(unwritable.warning().find("CHORUS_AUTOTUNE_LOG: cannot write '/nonexistent-dir/autotune.csv'") == 0);
}

TEST_CASE("Tuned settings travel in the response list and are checked when read", "[autotune][messages]") {
  ResponseList list;
  list.tuned = TunedSettings{4, 1 << 20, 50.0, 2.0};
  ResponseList back;
  REQUIRE(ResponseList::parse(list.serialize(), &back).is_ok());
  REQUIRE(back == list);
  list.tuned->cycle_time_ms = 1e9;
  const Status bad = ResponseList::parse(list.serialize(), &back);
  REQUIRE(bad.message().find("tuned settings out of range") != std::string::npos);
  list.tuned.reset();
  REQUIRE(ResponseList::parse(list.serialize(), &back).is_ok());
  REQUIRE_FALSE(back.tuned);
}

TEST_CASE("Every rank applies each autotuned setting before the same round", "[autotune][runtime]") {
  const std::string path = "autotune_ranks_test.csv";
  RuntimeOptions o = quiet_options();
  o.autotune = true;
  o.autotune_sample_ms = 0;  // every list that moved bytes ends a sample
  o.autotune_warmup_samples = 1;
  o.autotune_samples_per_trial = 1;
  o.autotune_log_path = path;
  std::vector<std::vector<TuningApplied>> applied(3);
  run_ranks(3, [&](Runtime& rt, int rank) {
    std::vector<float> a(1000, 1.0f), b(300, 2.0f);
    auto ta = std::make_shared<HostTensorView>(a.data(), DataType::kFloat32, TensorShape{1000});
    auto tb = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32, TensorShape{300});
    for (int step = 0; step < 200; ++step) {
      Handle ha = rt.allreduce_async("a", ta, ta), hb = rt.allreduce_async("b", tb, tb);
      ha.wait();
      hb.wait();
    }
    rt.barrier_async().wait();  // after the final choice nothing changes: every rank has heard all
    applied[static_cast<size_t>(rank)] = RuntimeAccess::stats(rt).tuning_applied;
    RANK_CHECK(a[0] == 1.0f && b[0] == 2.0f);  // Average of equal values
  }, o);
  REQUIRE(applied[0].size() == 5 + 5 + 4 + 1);  // one per trial (the grid and the defaults) and the final
  REQUIRE(applied[0].back().settings.trial == -1);
  REQUIRE(applied[1] == applied[0]);
  REQUIRE(applied[2] == applied[0]);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 1 + 14 + 1);
  std::ostringstream final_row;
  const TunedSettings& f = applied[0].back().settings;
  final_row << "final," << f.fusion_threshold_bytes << ',' << f.fusion_wait_us << ',' << f.cycle_time_ms << ',';
  REQUIRE(lines.back().rfind(final_row.str(), 0) == 0);
  std::remove(path.c_str());
}
