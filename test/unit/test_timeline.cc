// The timeline: a Chrome trace per rank with each tensor's negotiation and
// each executed response's pack / allreduce / unpack.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/env_params.h"
#include "env_guard.h"
#include "loopback_job.h"
#include "timeline/timeline.h"

using namespace chorus;
using chorus::test::run_ranks;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("CHORUS_TIMELINE writes a trace per rank", "[timeline]") {
  const std::string path = "chorus_test_timeline.json";
  RuntimeOptions options = chorus::test::quiet_options();
  options.timeline_path = path;
  run_ranks(2, [](Runtime& rt, int rank) {
    std::vector<float> a(1000, float(rank)), b(10, 1.0f);
    auto ta = std::make_shared<HostTensorView>(a.data(), DataType::kFloat32, TensorShape{1000});
    auto tb = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32, TensorShape{10});
    Handle h1 = rt.allreduce_async("layer.\"quoted\".grad", ta, ta);
    Handle h2 = rt.allreduce_async("bias.grad", tb, tb);
    h1.wait();
    h2.wait();
  }, options);
  const std::string rank0 = slurp(path), rank1 = slurp(path + ".rank1");
  std::remove(path.c_str());
  std::remove((path + ".rank1").c_str());
  for (const std::string& trace : {rank0, rank1}) {
    REQUIRE(trace.rfind("[\n", 0) == 0);
    REQUIRE(trace.size() > 4);
    REQUIRE(trace.substr(trace.size() - 4) == "{}]\n");
    REQUIRE_THAT(trace, Catch::Contains("\"name\":\"layer.\\\"quoted\\\".grad\""));  // a row per tensor, escaped
    REQUIRE_THAT(trace, Catch::Contains("\"name\":\"NEGOTIATE_ALLREDUCE\""));
    REQUIRE_THAT(trace, Catch::Contains("\"name\":\"data plane\""));
    REQUIRE_THAT(trace, Catch::Contains("\"name\":\"ALLREDUCE"));
  }
}

TEST_CASE("A timeline that cannot be written is reported, not fatal", "[timeline]") {
  detail::Timeline t;
  const Status opened = t.open("/nonexistent-dir/x.json", 0);
  REQUIRE(opened.code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(opened.message(), Catch::Contains("/nonexistent-dir/x.json"));
  REQUIRE_FALSE(t.enabled());
  t.record("row", "label", detail::Timeline::Clock::now(), detail::Timeline::Clock::now());  // a no-op
}

TEST_CASE("A timeline started at run time: once at a time, closed as JSON, reopened fresh", "[timeline]") {
  const std::string first = "chorus_test_timeline_run_time.json", second = first + ".second";
  detail::Timeline t;
  REQUIRE_FALSE(t.close());  // stop without start: nothing happens
  REQUIRE(t.open(first, 0, /*mark_cycles=*/true).is_ok());
  REQUIRE(t.marks_cycles());
  const Status again = t.open(second, 0);
  REQUIRE(again.code() == StatusCode::kPreconditionError);
  REQUIRE_THAT(again.message(), Catch::Contains(first));
  const auto before_start = detail::Timeline::Clock::now() - std::chrono::seconds(5);
  t.record("row", "early", before_start, detail::Timeline::Clock::now());  // clamped to the file's start
  t.instant("cycles", "CYCLE_START", detail::Timeline::Clock::now());
  REQUIRE(t.close());
  REQUIRE_FALSE(t.enabled());
  REQUIRE_FALSE(t.marks_cycles());
  t.record("row", "after stop", before_start, detail::Timeline::Clock::now());  // a no-op
  REQUIRE(t.open(second, 0).is_ok());
  t.record("row", "second file", detail::Timeline::Clock::now(), detail::Timeline::Clock::now());
  REQUIRE(t.close());
  const std::string one = slurp(first), two = slurp(second);
  std::remove(first.c_str());
  std::remove(second.c_str());
  REQUIRE(one.substr(one.size() - 4) == "{}]\n");
  REQUIRE_THAT(one, Catch::Contains("\"name\":\"early\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":0.000"));
  REQUIRE_THAT(one, Catch::Contains("\"name\":\"CYCLE_START\",\"ph\":\"i\""));
  REQUIRE_THAT(one, !Catch::Contains("after stop"));
  REQUIRE_THAT(two, Catch::Contains("\"name\":\"row\"") && Catch::Contains("second file"));  // rows named again
  REQUIRE(two.substr(two.size() - 4) == "{}]\n");
}

// Horovod's HOROVOD_TIMELINE=DYNAMIC (its test_torch.py sets it at import):
// no file until the program starts one, and then the one it names.
TEST_CASE("HOROVOD_TIMELINE=DYNAMIC starts no timeline; start_timeline() does", "[timeline][env]") {
  for (const char* var : {"HOROVOD_TIMELINE", "CHORUS_TIMELINE"}) {
    chorus::test::EnvGuard env;
    env.set(var, "DYNAMIC");
    RuntimeOptions options = chorus::test::quiet_options();
    REQUIRE(detail::options_from_environment(&options).is_ok());
    REQUIRE(options.timeline_path.empty());
    const std::string path = "chorus_test_timeline_dynamic.json";
    std::atomic<int> stopped{0};  // Catch's assertions are for the main thread
    auto ranks_body = [&](Runtime& rt, int rank) {
      std::vector<float> a(8, float(rank));
      auto t = std::make_shared<HostTensorView>(a.data(), DataType::kFloat32, TensorShape{8});
      rt.allreduce_async("before.start", t, t).wait();
      rt.start_timeline(path);  // not "already being written to 'DYNAMIC'"
      rt.allreduce_async("after.start", t, t).wait();
      stopped += rt.stop_timeline() ? 1 : 0;
    };
    run_ranks(2, ranks_body, options);
    REQUIRE(stopped == 2);
    for (const std::string& f : {std::string("DYNAMIC"), std::string("DYNAMIC.rank1")}) {
      REQUIRE_FALSE(std::ifstream(f).good());
    }
    const std::string trace = slurp(path);
    std::remove(path.c_str());
    std::remove((path + ".rank1").c_str());
    REQUIRE_THAT(trace, Catch::Contains("after.start") && !Catch::Contains("before.start"));
  }
  chorus::test::EnvGuard env;
  env.set("HOROVOD_TIMELINE", "dynamic.json");  // any other value is a file path
  RuntimeOptions options;
  REQUIRE(detail::options_from_environment(&options).is_ok());
  REQUIRE(options.timeline_path == "dynamic.json");
}
