// The environment registry: CHORUS_* first, HOROVOD_* as fallback, clear errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

#include "chorus/error.h"
#include "common/env_params.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
struct EnvGuard {
  std::vector<std::string> names;
  void set(const std::string& name, const std::string& value) {
    names.push_back(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~EnvGuard() {
    for (auto& n : names) unsetenv(n.c_str());
  }
};
}  // namespace

TEST_CASE("Defaults hold when nothing is set", "[env]") {
  RuntimeOptions o;
  REQUIRE(options_from_environment(&o).is_ok());
  REQUIRE(o.fusion_threshold_bytes == 128ll * 1024 * 1024);
  REQUIRE(o.cycle_time_ms == 1.0);
  REQUIRE(o.wake_on_enqueue);
}

TEST_CASE("CHORUS_ wins over HOROVOD_, which is the fallback", "[env]") {
  EnvGuard env;
  env.set("HOROVOD_FUSION_THRESHOLD", "1000");
  env.set("HOROVOD_CYCLE_TIME", "2.5");
  env.set("CHORUS_CYCLE_TIME", "0.5");
  env.set("CHORUS_LOG_LEVEL", "DEBUG");
  RuntimeOptions o;
  REQUIRE(options_from_environment(&o).is_ok());
  REQUIRE(o.fusion_threshold_bytes == 1000);
  REQUIRE(o.cycle_time_ms == 0.5);
  REQUIRE(o.log_level == LogLevel::kDebug);
}

TEST_CASE("A bad value names the variable and what was expected", "[env]") {
  EnvGuard env;
  env.set("HOROVOD_FUSION_THRESHOLD", "64MB");
  RuntimeOptions o;
  Status s = options_from_environment(&o);
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("HOROVOD_FUSION_THRESHOLD='64MB'") && Catch::Contains("bytes"));
  REQUIRE_THROWS_AS(RuntimeOptions::from_environment(), InvalidArgumentError);
}

TEST_CASE("The shared-memory allreduce knobs", "[env][shm]") {
  {
    EnvGuard env;
    env.set("CHORUS_ALLREDUCE_ALGO", "shm");
    env.set("CHORUS_SHM_THRESHOLD_BYTES", "65536");
    env.set("CHORUS_SHM_BLOCK_BYTES", "4096");
    RuntimeOptions o;
    REQUIRE(options_from_environment(&o).is_ok());
    REQUIRE(o.allreduce_algorithm == AllreduceAlgorithm::kSharedMemory);
    REQUIRE(o.shm_threshold_bytes == 65536);
    REQUIRE(o.shm_block_bytes == 4096);
  }
  for (const char* bad : {"64", "5000"}) {  // under 4 KiB; not a multiple of 64 (alignment)
    EnvGuard env;
    env.set("CHORUS_SHM_BLOCK_BYTES", bad);
    RuntimeOptions o;
    Status s = options_from_environment(&o);
    REQUIRE_THAT(s.message(), Catch::Contains(std::string("CHORUS_SHM_BLOCK_BYTES='") + bad + "'"));
  }
  {
    EnvGuard env;
    env.set("CHORUS_ALLREDUCE_ALGO", "nccl");
    RuntimeOptions o;
    REQUIRE_THAT(options_from_environment(&o).message(), Catch::Contains("auto, ring, mpi or shm"));
  }
}

TEST_CASE("A stall shutdown time implies the stall check that notices it", "[env]") {
  EnvGuard env;
  env.set("CHORUS_STALL_SHUTDOWN_TIME_SECONDS", "5");
  RuntimeOptions o;
  REQUIRE(options_from_environment(&o).is_ok());
  REQUIRE(o.stall_shutdown_seconds == 5);
  REQUIRE(o.stall_check_seconds == 5);
}

TEST_CASE("Every knob is documented in the registry", "[env]") {
  for (const auto& p : env_params()) {
    REQUIRE(std::string(p.description).size() > 10);
    REQUIRE(std::string(p.default_text).size() > 0);
  }
}

TEST_CASE("Set CHORUS_* variables that no knob reads are reported", "[env]") {
  setenv("CHORUS_FUSION_THRESHLOD", "1", 1);  // a typo
  setenv("CHORUS_CYCLE_TIME", "1", 1);        // a real knob
  setenv("CHORUS_TEST_ANYTHING", "1", 1);     // the tests' own
  const std::vector<std::string> unknown = detail::unknown_chorus_variables();
  unsetenv("CHORUS_FUSION_THRESHLOD");
  unsetenv("CHORUS_CYCLE_TIME");
  unsetenv("CHORUS_TEST_ANYTHING");
  REQUIRE(std::count(unknown.begin(), unknown.end(), "CHORUS_FUSION_THRESHLOD") == 1);
  REQUIRE(std::count(unknown.begin(), unknown.end(), "CHORUS_CYCLE_TIME") == 0);
  REQUIRE(std::count(unknown.begin(), unknown.end(), "CHORUS_TEST_ANYTHING") == 0);
}
