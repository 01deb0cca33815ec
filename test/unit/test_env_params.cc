// The environment registry: CHORUS_* first, HOROVOD_* as fallback, clear errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "chorus/chorus.h"
#include "chorus/error.h"
#include "env_guard.h"
#include "comm/loopback/loopback_backend.h"
#include "common/env_params.h"
#include "api/runtime_access.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
using test::EnvGuard;
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
  for (const Knob& k : knobs()) {
    INFO(k.name);
    REQUIRE(std::string(k.description).size() > 10);
    REQUIRE(std::string(k.default_text).size() > 0);
    // The default is a value the knob accepts, and what options hold unless set.
    RuntimeOptions o;
    if (k.kind != KnobKind::kText) REQUIRE(k.apply(k, k.default_text, &o).is_ok());
    if (k.current != nullptr) REQUIRE(k.current(k, o) == k.current(k, RuntimeOptions()));
    REQUIRE((k.scope == KnobScope::kPerRank || k.value != nullptr));  // job-wide ones can be compared
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

namespace {
struct FloatKnob {
  const char* name;
  const char* max;        // the documented upper bound, accepted
  const char* past_max;   // just above it, refused
  const char* range;      // as the message states it
};
const FloatKnob kFloatKnobs[] = {
    {"FUSION_WAIT_US", "10000000", "10000000.001", "microseconds in 0..10000000"},
    {"CYCLE_TIME", "10000", "10000.5", "milliseconds in 0..10000"},
    {"SPIN_TIME_US", "1e6", "1.0000001e6", "microseconds in 0..1000000"},
    {"PENDING_SPIN_TIME_US", "1000000.0", "1000001", "microseconds in 0..1000000"},
    {"STALL_CHECK_TIME_SECONDS", "604800", "604800.01", "seconds in 0..604800"},
    {"STALL_SHUTDOWN_TIME_SECONDS", "604800", "6.05e5", "seconds in 0..604800"},
};

Status parse_one(const std::string& var, const std::string& value) {
  EnvGuard env;
  env.set(var, value);
  RuntimeOptions o;
  return options_from_environment(&o);
}
}  // namespace

TEST_CASE("Floating-point knobs refuse nan, inf, hex, junk and values out of range, naming the range", "[env]") {
  const char* bad_forms[] = {"nan",  "NAN",  "-nan", "inf",  "-inf", "infinity", "0x10", "0x1p3", "1e30",
                             "-1",   "-0.5", "5ms",  "5 ",   " 5",   "+5",       "",     "1e",    "1.",
                             ".5",   "1..2", "e3",   "1e+",  "--1",  "1,5"};
  for (const FloatKnob& k : kFloatKnobs) {
    for (const std::string prefix : {"CHORUS_", "HOROVOD_"}) {
      const std::string var = prefix + k.name;
      for (const std::string bad : {std::string(k.past_max)}) {
        INFO(var << "=" << bad);
        const Status s = parse_one(var, bad);
        REQUIRE(s.code() == StatusCode::kInvalidArgument);
        REQUIRE_THAT(s.message(), Catch::Contains(var + "='" + bad + "'") && Catch::Contains(k.range));
      }
      for (const char* bad : bad_forms) {
        INFO(var << "=" << bad);
        const Status s = parse_one(var, bad);
        REQUIRE(s.code() == StatusCode::kInvalidArgument);
        REQUIRE_THAT(s.message(), Catch::Contains(var + "='" + bad + "'") && Catch::Contains(k.range));
      }
    }
  }
}

TEST_CASE("Floating-point knobs take both ends of their range and plain decimals", "[env]") {
  for (const FloatKnob& k : kFloatKnobs) {
    for (const char* good : {"0", "-0", "0.0", k.max, "2.5", "25e-1", "1E2"}) {
      INFO(k.name << "=" << good);
      REQUIRE(parse_one(std::string("CHORUS_") + k.name, good).is_ok());
    }
  }
  EnvGuard env;
  env.set("CHORUS_CYCLE_TIME", "10000");
  env.set("CHORUS_FUSION_WAIT_US", "2.5e2");
  env.set("HOROVOD_STALL_CHECK_TIME_SECONDS", "604800");
  RuntimeOptions o;
  REQUIRE(options_from_environment(&o).is_ok());
  REQUIRE(o.cycle_time_ms == 10000.0);
  REQUIRE(o.fusion_wait_us == 250.0);
  REQUIRE(o.stall_check_seconds == 604800.0);
}

TEST_CASE("Integer knobs take plain decimals only, within their range", "[env]") {
  for (const char* bad : {" 5", "5 ", "+5", "0x10", "1e3", "5.0", "", "-", "99999999999999999999"}) {
    INFO("CHORUS_CACHE_CAPACITY=" << bad);
    const Status s = parse_one("CHORUS_CACHE_CAPACITY", bad);
    REQUIRE_THAT(s.message(), Catch::Contains(std::string("CHORUS_CACHE_CAPACITY='") + bad + "'") &&
                                  Catch::Contains("entries in 0..16777216"));
  }
  REQUIRE(parse_one("CHORUS_CACHE_CAPACITY", "16777216").is_ok());
  REQUIRE_FALSE(parse_one("CHORUS_CACHE_CAPACITY", "16777217").is_ok());
  REQUIRE(parse_one("CHORUS_RING_SEGMENT_BYTES", "1").is_ok());
  REQUIRE_THAT(parse_one("HOROVOD_RING_SEGMENT_BYTES", "0").message(),
               Catch::Contains("HOROVOD_RING_SEGMENT_BYTES='0'") && Catch::Contains("bytes in 1..1073741824"));
  REQUIRE(parse_one("CHORUS_FUSION_THRESHOLD", "9223372036854775807").is_ok());
  REQUIRE_THAT(parse_one("CHORUS_FUSION_THRESHOLD", "-1").message(), Catch::Contains("bytes >= 0"));
}

TEST_CASE("Options built in code are held to the same ranges at init(options)", "[env]") {
  REQUIRE(check_options(RuntimeOptions()).is_ok());
  const double bad_values[] = {std::nan(""), HUGE_VAL, -HUGE_VAL, 1e30, -1.0};
  for (double bad : bad_values) {
    RuntimeOptions o;
    o.cycle_time_ms = bad;
    INFO("cycle_time_ms = " << bad);
    REQUIRE_THAT(check_options(o).message(), Catch::Contains("CHORUS_CYCLE_TIME") && Catch::Contains("0..10000"));
    REQUIRE_THROWS_AS(chorus::init(o), InvalidArgumentError);  // refused before anything starts
  }
  RuntimeOptions edge;
  edge.fusion_wait_us = 1e6;
  edge.spin_time_us = 1e-5;
  edge.pending_spin_time_us = 0.1;
  edge.stall_shutdown_seconds = 604800;
  REQUIRE(check_options(edge).is_ok());
  for (double RuntimeOptions::*field : {&RuntimeOptions::fusion_wait_us, &RuntimeOptions::spin_time_us,
                                        &RuntimeOptions::pending_spin_time_us, &RuntimeOptions::stall_check_seconds,
                                        &RuntimeOptions::stall_shutdown_seconds}) {
    RuntimeOptions o;
    o.*field = std::nan("");
    REQUIRE_THAT(check_options(o).message(), Catch::Contains("is nan") && Catch::Contains("expected a decimal number"));
  }
  RuntimeOptions o;
  o.ring_segment_bytes = 0;
  REQUIRE_THAT(check_options(o).message(), Catch::Contains("CHORUS_RING_SEGMENT_BYTES is 0"));
  // A Runtime constructed directly (over any backend) checks them too.
  RuntimeOptions nan_cycle;
  nan_cycle.cycle_time_ms = std::nan("");
  auto world = detail::make_loopback_world(1);
  REQUIRE_THROWS_WITH(detail::RuntimeAccess::make(detail::make_loopback_backend(world, 0), nan_cycle),
                      Catch::Contains("CHORUS_CYCLE_TIME"));
}

TEST_CASE("Horovod's special values mean what they mean in Horovod", "[env][horovod]") {
  auto options_with = [](std::vector<std::pair<const char*, const char*>> vars) {
    EnvGuard env;
    for (const auto& [name, value] : vars) env.set(name, value);
    RuntimeOptions o;
    const Status s = options_from_environment(&o);
    REQUIRE(s.is_ok());
    return o;
  };
  SECTION("HOROVOD_STALL_CHECK_DISABLE=1: no warnings and no shutdown, whatever the times say") {
    const RuntimeOptions o = options_with({{"HOROVOD_STALL_CHECK_DISABLE", "1"},
                                           {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "5"},
                                           {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"}});
    REQUIRE(o.stall_check_seconds == 0);
    REQUIRE(o.stall_shutdown_seconds == 0);
    REQUIRE(options_with({{"HOROVOD_STALL_CHECK_DISABLE", "0"}}).stall_check_seconds == 60);
  }
  SECTION("on/off: a whole number > 0 is on (HOROVOD_AUTOTUNE=2), words in any case") {
    REQUIRE(options_with({{"HOROVOD_AUTOTUNE", "2"}}).autotune);
    REQUIRE(options_with({{"HOROVOD_AUTOTUNE", "True"}}).autotune);
    REQUIRE_FALSE(options_with({{"HOROVOD_AUTOTUNE", "0"}}).autotune);
    REQUIRE(options_with({{"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}).hierarchical_allreduce);
    EnvGuard env;
    env.set("HOROVOD_AUTOTUNE", "-1");  // Horovod reads it as off; here a clear error
    RuntimeOptions o;
    REQUIRE_THAT(options_from_environment(&o).message(), Catch::Contains("HOROVOD_AUTOTUNE='-1'"));
  }
  SECTION("0 turns the cache, fusion and the stall check off") {
    REQUIRE(options_with({{"HOROVOD_CACHE_CAPACITY", "0"}}).cache_capacity == 0);
    REQUIRE(options_with({{"HOROVOD_FUSION_THRESHOLD", "0"}}).fusion_threshold_bytes == 0);
    REQUIRE(options_with({{"HOROVOD_STALL_CHECK_TIME_SECONDS", "0"}}).stall_check_seconds == 0);
  }
  SECTION("HOROVOD_GPU_OPERATIONS=MPI (Horovod's build-time choice) is the staged path") {
    REQUIRE(options_with({{"HOROVOD_GPU_OPERATIONS", "MPI"}}).gpu_operations == GpuOperations::kStaged);
    REQUIRE(options_with({{"HOROVOD_GPU_OPERATIONS", "NCCL"}}).gpu_operations == GpuOperations::kNccl);
  }
  SECTION("Horovod's variables Chorus has no counterpart for are named, not silently ignored") {
    EnvGuard env;
    env.set("HOROVOD_HIERARCHICAL_ALLGATHER", "1");
    env.set("HOROVOD_THREAD_AFFINITY", "0,1");
    const std::vector<std::string> unread = unread_horovod_variables();
    REQUIRE(std::find(unread.begin(), unread.end(), "HOROVOD_HIERARCHICAL_ALLGATHER") != unread.end());
    REQUIRE(std::find(unread.begin(), unread.end(), "HOROVOD_THREAD_AFFINITY") != unread.end());
  }
}
