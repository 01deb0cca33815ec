// chorusrun's elastic flags (horovodrun's): parsing and the rules between them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>

#include "launch_options.h"

using namespace chorus::launcher;

namespace {

ParseResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "chorusrun");
  return parse_command_line(args);
}

std::string error_of(const std::vector<std::string>& args) { return parse(args).error; }

}  // namespace

TEST_CASE("Without an elastic flag a job is not elastic", "[launcher][elastic]") {
  const ParseResult r = parse({"-np", "2", "prog"});
  REQUIRE(r.error.empty());
  REQUIRE_FALSE(r.options.elastic);
  REQUIRE_FALSE(r.options.tcp);
}

TEST_CASE("--min-np and --max-np make a job elastic, over TCP, with Horovod's defaults", "[launcher][elastic]") {
  const ParseResult r = parse({"--min-np", "2", "--max-np", "4", "./train", "--epochs", "3"});
  REQUIRE(r.error.empty());
  const LaunchOptions& o = r.options;
  REQUIRE(o.elastic);
  REQUIRE(o.tcp);
  REQUIRE(o.num_proc == 2);  // -np defaults to --min-np
  REQUIRE(o.elastic->min_np == 2);
  REQUIRE(o.elastic->max_np == 4);
  REQUIRE(o.elastic->discovery_script.empty());
  REQUIRE(o.elastic->slots_per_host == 1);
  REQUIRE(o.elastic->elastic_timeout_seconds == 600);
  REQUIRE_FALSE(o.elastic->reset_limit);
  REQUIRE_FALSE(o.elastic->blacklist_cooldown);
  REQUIRE(o.elastic->discovery_interval_seconds == 1);
  REQUIRE_FALSE(o.hosts_given);  // localhost:np, as without elastic flags
  REQUIRE(o.command == std::vector<std::string>{"./train", "--epochs", "3"});
}

TEST_CASE("--min-np defaults to -np, --max-np to no limit", "[launcher][elastic]") {
  ParseResult r = parse({"-np", "4", "--max-np", "8", "prog"});
  REQUIRE(r.error.empty());
  REQUIRE(r.options.elastic->min_np == 4);
  REQUIRE(r.options.elastic->max_np == 8);
  r = parse({"-np", "3", "--host-discovery-script", "./discover.sh", "prog"});
  REQUIRE(r.error.empty());
  REQUIRE(r.options.elastic->min_np == 3);
  REQUIRE_FALSE(r.options.elastic->max_np);
  REQUIRE(r.options.elastic->discovery_script == "./discover.sh");
  REQUIRE(r.options.hosts.empty());
  r = parse({"-np", "3", "--min-np", "2", "-H", "a:2,b:2", "prog"});
  REQUIRE(r.error.empty());
  REQUIRE(r.options.num_proc == 3);
  REQUIRE(r.options.hosts == std::vector<HostSlots>{{"a", 2}, {"b", 2}});
}

TEST_CASE("Every elastic flag, and the program's own words after them", "[launcher][elastic]") {
  const ParseResult r = parse({"--host-discovery-script",
                               "./d.sh",
                               "--min-np",
                               "2",
                               "--max-np",
                               "16",
                               "--slots-per-host",
                               "4",
                               "--elastic-timeout",
                               "30",
                               "--reset-limit",
                               "3",
                               "--blacklist-cooldown-range",
                               "10",
                               "100",
                               "--discovery-interval",
                               "0.5",
                               "--tcp",
                               "./train",
                               "--blacklist-cooldown-range",
                               "1",
                               "2"});
  REQUIRE(r.error.empty());
  const ElasticOptions& e = *r.options.elastic;
  REQUIRE(e.slots_per_host == 4);
  REQUIRE(e.elastic_timeout_seconds == 30);
  REQUIRE(e.reset_limit == 3);
  REQUIRE(e.blacklist_cooldown == CooldownRange{10, 100});
  REQUIRE(e.discovery_interval_seconds == 0.5);
  REQUIRE(r.options.command == std::vector<std::string>{"./train", "--blacklist-cooldown-range", "1", "2"});
  // LO attached, HI the next word: the program still starts after HI.
  const ParseResult attached = parse({"--min-np", "1", "--blacklist-cooldown-range=5", "60", "prog", "x"});
  REQUIRE(attached.error.empty());
  REQUIRE(attached.options.elastic->blacklist_cooldown == CooldownRange{5, 60});
  REQUIRE(attached.options.command == std::vector<std::string>{"prog", "x"});
  REQUIRE(parse({"--min-np", "1", "--reset-limit", "0", "prog"}).options.elastic->reset_limit == 0);
  REQUIRE(parse({"--min-np", "1", "--blacklist-cooldown-range", "0", "0", "prog"}).error.empty());
}

TEST_CASE("Elastic flags in a config file", "[launcher][elastic]") {
  const std::string path = "test_elastic_options.cfg";
  std::ofstream(path) << "min-np = 2\nmax-np = 6\nblacklist-cooldown-range = 30 300\nelastic-timeout = 60\n";
  const ParseResult r = parse({"--config-file", path, "prog"});
  std::remove(path.c_str());
  REQUIRE(r.error.empty());
  REQUIRE(r.options.num_proc == 2);
  REQUIRE(r.options.elastic->max_np == 6);
  REQUIRE(r.options.elastic->blacklist_cooldown == CooldownRange{30, 300});
  REQUIRE(r.options.elastic->elastic_timeout_seconds == 60);
}

TEST_CASE("Elastic training refuses MPI's flags and a second host list", "[launcher][elastic]") {
  const std::string mpi =
      "elastic training runs over the TCP transport: --mpi-args cannot be used with "
      "--min-np/--max-np/--host-discovery-script";
  REQUIRE(error_of({"--min-np", "2", "--mpi-args", "--mca x y", "prog"}) == mpi);
  REQUIRE(error_of({"-np", "2", "--host-discovery-script", "./d", "--mpi-args", "-v", "prog"}) == mpi);
  REQUIRE_THAT(error_of({"-np", "2", "--host-discovery-script", "./d", "-H", "a:2", "prog"}),
               Catch::Contains("give either -H or --host-discovery-script, not both"));
  REQUIRE_THAT(error_of({"-np", "2", "--host-discovery-script", "./d", "--hostfile", "hf", "prog"}),
               Catch::Contains("give either --hostfile or --host-discovery-script, not both"));
  REQUIRE_THAT(error_of({"-np", "2", "--host-discovery-script", "", "prog"}), Catch::Contains("empty path"));
}

TEST_CASE("Elastic sizes: 1 <= min-np <= np <= max-np", "[launcher][elastic]") {
  REQUIRE_THAT(error_of({"--min-np", "0", "prog"}), Catch::Contains("--min-np 0: the fewest ranks must be at least 1"));
  REQUIRE_THAT(error_of({"-np", "2", "--max-np", "0", "prog"}), Catch::Contains("--max-np 0"));
  REQUIRE_THAT(error_of({"--min-np", "4", "--max-np", "2", "prog"}),
               Catch::Contains("--max-np 2 is less than --min-np 4"));
  REQUIRE_THAT(error_of({"-np", "1", "--min-np", "2", "prog"}), Catch::Contains("-np 1 is less than --min-np 2"));
  REQUIRE_THAT(error_of({"-np", "8", "--max-np", "4", "prog"}), Catch::Contains("-np 8 is more than --max-np 4"));
  REQUIRE_THAT(error_of({"--max-np", "4", "prog"}), Catch::Contains("missing -np"));
  REQUIRE(error_of({"-np", "4", "--min-np", "4", "--max-np", "4", "prog"}).empty());
}

TEST_CASE("Elastic-only flags without elastic training are refused, naming the flag", "[launcher][elastic]") {
  const std::vector<std::vector<std::string>> cases = {{"--slots-per-host", "2"},
                                                       {"--elastic-timeout", "60"},
                                                       {"--reset-limit", "3"},
                                                       {"--blacklist-cooldown-range", "1", "2"},
                                                       {"--discovery-interval", "2"}};
  for (const auto& flag : cases) {
    std::vector<std::string> args = {"-np", "2"};
    args.insert(args.end(), flag.begin(), flag.end());
    args.push_back("prog");
    INFO(flag[0]);
    REQUIRE_THAT(error_of(args), Catch::StartsWith(flag[0] + " only applies to elastic training"));
  }
  REQUIRE_THAT(error_of({"--min-np", "2", "--slots-per-host", "2", "prog"}),
               Catch::StartsWith("--slots-per-host") && Catch::Contains("--host-discovery-script"));
}

TEST_CASE("Elastic flags' values are checked", "[launcher][elastic]") {
  const std::vector<std::string> elastic = {"-np", "2", "--host-discovery-script", "./d"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = elastic;
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("prog");
    return error_of(args);
  };
  REQUIRE_THAT(with({"--slots-per-host", "0"}), Catch::Contains("--slots-per-host 0: must be at least 1"));
  REQUIRE_THAT(with({"--elastic-timeout", "0"}),
               Catch::Contains("--elastic-timeout 0: must be a number of seconds > 0"));
  REQUIRE_THAT(with({"--elastic-timeout", "nan"}), Catch::Contains("--elastic-timeout"));
  REQUIRE_THAT(with({"--discovery-interval", "0"}), Catch::Contains("--discovery-interval 0"));
  REQUIRE_THAT(with({"--reset-limit=-1"}), Catch::Contains("--reset-limit -1: must be 0 or more"));
  REQUIRE_THAT(with({"--blacklist-cooldown-range", "300", "60"}),
               Catch::Contains("--blacklist-cooldown-range 300 60: LO must not be more than HI"));
  REQUIRE_THAT(with({"--blacklist-cooldown-range", "x", "60"}), Catch::Contains("two numbers of seconds >= 0"));
  REQUIRE_THAT(with({"--blacklist-cooldown-range=-5", "60"}), Catch::Contains("two numbers of seconds >= 0"));
  REQUIRE_THAT(with({"--blacklist-cooldown-range", "inf", "inf"}), Catch::Contains("two numbers of seconds >= 0"));
}

TEST_CASE("--help lists the elastic flags", "[launcher][elastic]") {
  const std::string help = parse({"--help"}).help_text;
  for (const char* flag : {"--min-np", "--max-np", "--host-discovery-script", "--slots-per-host", "--elastic-timeout",
                           "--reset-limit", "--blacklist-cooldown-range", "--discovery-interval"}) {
    INFO(flag);
    REQUIRE_THAT(help, Catch::Contains(flag));
  }
}

TEST_CASE("--elastic-timeout defaults to HOROVOD_ELASTIC_TIMEOUT, as horovodrun's", "[launcher][elastic]") {
  ::setenv("HOROVOD_ELASTIC_TIMEOUT", "60", 1);
  const ParseResult from_env = parse({"--min-np", "2", "prog"});
  const ParseResult flag_wins = parse({"--min-np", "2", "--elastic-timeout", "30", "prog"});
  ::setenv("HOROVOD_ELASTIC_TIMEOUT", "soon", 1);
  const ParseResult bad = parse({"--min-np", "2", "prog"});
  ::unsetenv("HOROVOD_ELASTIC_TIMEOUT");
  REQUIRE(from_env.error.empty());
  REQUIRE(from_env.options.elastic->elastic_timeout_seconds == 60);
  REQUIRE(flag_wins.options.elastic->elastic_timeout_seconds == 30);
  REQUIRE_THAT(bad.error, Catch::Contains("HOROVOD_ELASTIC_TIMEOUT='soon'"));
}
