// chorusrun's tuning flags come from the core's knob registry: one flag per
// knob, and a value passes exactly when the core would take it.
#include <catch2/catch.hpp>

#include "common/knob_registry.h"
#include "launch_options.h"
#include "tuning_flags.h"

using namespace chorus;
using namespace chorus::launcher;

namespace {
ParseResult parse_flag(const std::string& flag, const std::string& value) {
  return parse_command_line({"chorusrun", "-np", "2", "--" + flag, value, "prog"});
}
}  // namespace

TEST_CASE("Every knob has a flag that sets its variable", "[launcher][tuning]") {
  for (const detail::Knob& k : detail::knobs()) {
    INFO(k.name);
    if (!k.launcher_flag) {  // a secret: no flag at all
      REQUIRE(!parse_flag(tuning_flag(k), "x").error.empty());
      continue;
    }
    const std::string value = k.kind == detail::KnobKind::kText ? "/tmp/x" : k.default_text;
    const ParseResult r = parse_flag(tuning_flag(k), value);
    REQUIRE(r.error.empty());
    REQUIRE(r.options.knobs.size() == 1);
    REQUIRE(r.options.knobs[0].first == k.variable());
  }
}

TEST_CASE("A flag's value passes exactly when the core takes it", "[launcher][tuning]") {
  const std::pair<const char*, const char*> cases[] = {
      {"CACHE_CAPACITY", "16777216"}, {"CACHE_CAPACITY", "16777217"}, {"CACHE_CAPACITY", "1e3"},
      {"RING_SEGMENT_BYTES", "0"},    {"SHM_BLOCK_BYTES", "5000"},    {"SHM_BLOCK_BYTES", "4096"},
      {"CYCLE_TIME", "10000"},        {"CYCLE_TIME", "10001"},        {"CYCLE_TIME", "nan"},
      {"WAKE_ON_ENQUEUE", "yes"},     {"WAKE_ON_ENQUEUE", "2"},       {"LOG_LEVEL", "WARN"},
      {"ALLREDUCE_ALGO", "shm"},      {"ALLREDUCE_ALGO", "fast"},     {"SPIN_TIME_US", "+5"},
  };
  for (const auto& [name, value] : cases) {
    INFO(name << "=" << value);
    const detail::Knob& k = *detail::find_knob(name);
    RuntimeOptions scratch;
    const Status fits = k.apply(k, value, &scratch);
    const std::string core_says = fits.message();
    REQUIRE(fits.is_ok() == core_says.empty());
    const ParseResult r = parse_flag(tuning_flag(k), value);
    REQUIRE(r.error.empty() == core_says.empty());
    if (!core_says.empty()) REQUIRE_THAT(r.error, Catch::Contains(core_says));
  }
}

TEST_CASE("--fusion-threshold-mb takes MiB, fractions too, and passes bytes", "[launcher][tuning]") {
  REQUIRE(parse_flag("fusion-threshold-mb", "0.5").options.knobs ==
          std::vector<std::pair<std::string, std::string>>{{"CHORUS_FUSION_THRESHOLD", "524288"}});
  REQUIRE_THAT(parse_flag("fusion-threshold-mb", "lots").error, Catch::Contains("a number of MiB >= 0"));
}
