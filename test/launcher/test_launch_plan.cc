// chorusrun's pure parts: option parsing -> launch plan -> mpirun argv.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "chorus/version.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "host_list.h"
#include "launch_options.h"
#include "launch_plan.h"

using namespace chorus::launcher;

namespace {

ParseResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "chorusrun");
  return parse_command_line(args);
}

LaunchContext context(bool root = false) {
  LaunchContext c;
  c.is_root = root;
  c.local_cores = 4;
  c.local_host_names = {"node7", "node7.example"};
  c.mpirun_path = "/usr/bin/mpirun";
  c.program_path = "./train";
  return c;
}

LaunchPlan plan_of(const std::vector<std::string>& args, bool root = false) {
  const ParseResult r = parse(args);
  REQUIRE(r.error.empty());
  LaunchPlan p;
  REQUIRE(make_launch_plan(r.options, context(root), &p).empty());
  return p;
}

// True when `needle` appears in `argv` as consecutive words.
bool has_words(const std::vector<std::string>& argv, const std::vector<std::string>& needle) {
  return std::search(argv.begin(), argv.end(), needle.begin(), needle.end()) != argv.end();
}

}  // namespace

TEST_CASE("Host specs parse, with slots defaulting to 1", "[launcher][hosts]") {
  std::vector<HostSlots> hosts;
  REQUIRE(parse_host_spec("a:4,b:4", &hosts).empty());
  REQUIRE(hosts == std::vector<HostSlots>{{"a", 4}, {"b", 4}});
  REQUIRE(parse_host_spec("10.0.0.1,c", &hosts).empty());
  REQUIRE(hosts == std::vector<HostSlots>{{"10.0.0.1", 1}, {"c", 1}});
  REQUIRE(parse_host_spec("node-1.example.org:2,gpu_box", &hosts).empty());
  for (const char* bad : {"", "a:", "a:0", "a:-1", "a:x", ":4", "a;b:2", "a:2,", "a b:2", "$(reboot):1", "-a:1"}) {
    INFO(bad);
    REQUIRE_FALSE(parse_host_spec(bad, &hosts).empty());
  }
  // Dots only where they separate labels: no empty label, no label ending in '-'.
  for (const char* bad : {".:2", "..:2", ".a:2", "a.:2", "a..b:2", "a-.b:1", "a.-b:1"}) {
    INFO(bad);
    REQUIRE_THAT(parse_host_spec(bad, &hosts), Catch::Contains("malformed host '" + std::string(bad) + "'"));
  }
  REQUIRE_THAT(parse_hostfile(". slots=2\n", "hf", &hosts), Catch::Contains("hf:1: malformed host '.'"));
  REQUIRE_THAT(parse_host_spec("a:2,b:zz", &hosts), Catch::Contains("'b:zz'"));
}

TEST_CASE("Hostfiles parse 'host slots=N' lines with comments", "[launcher][hosts]") {
  std::vector<HostSlots> hosts;
  REQUIRE(parse_hostfile("# cluster\nnode1 slots=4\n\nnode2 slots=2 # gpu box\nnode3\n", "hf", &hosts).empty());
  REQUIRE(hosts == std::vector<HostSlots>{{"node1", 4}, {"node2", 2}, {"node3", 1}});
  REQUIRE_THAT(parse_hostfile("node1 slots=4\nnode2 slots=two\n", "hf", &hosts), Catch::StartsWith("hf:2:"));
  REQUIRE_THAT(parse_hostfile("node1 cpus=4\n", "hf", &hosts), Catch::Contains("unknown field 'cpus=4'"));
  REQUIRE_THAT(parse_hostfile("# nothing\n", "hf", &hosts), Catch::Contains("no hosts"));
}

TEST_CASE("-np, -H and the program with its own arguments", "[launcher][options]") {
  const ParseResult r = parse({"-np", "8", "-H", "a:4,b:4", "./train", "--epochs", "3", "-np", "2", "-H", "x"});
  REQUIRE(r.error.empty());
  REQUIRE(r.options.num_proc == 8);
  REQUIRE(r.options.hosts == std::vector<HostSlots>{{"a", 4}, {"b", 4}});
  // Everything after PROGRAM belongs to the program, even words that look like ours.
  REQUIRE(r.options.command == std::vector<std::string>{"./train", "--epochs", "3", "-np", "2", "-H", "x"});
  const ParseResult dashdash = parse({"-np", "2", "--", "-weird-name"});
  REQUIRE(dashdash.error.empty());
  REQUIRE(dashdash.options.command == std::vector<std::string>{"-weird-name"});
}

TEST_CASE("Tuning flags become CHORUS_* variables", "[launcher][options]") {
  const ParseResult r = parse({"-np", "2", "--fusion-threshold-mb", "32", "--cycle-time-ms", "0.5",
                               "--cache-capacity", "256", "--timeline-filename", "/tmp/tl.json",
                               "--stall-check-warning-time-seconds", "30",
                               "--stall-check-shutdown-time-seconds", "120", "--log-level", "debug",
                               "--allreduce-algo", "ring", "prog"});
  REQUIRE(r.error.empty());
  using KV = std::pair<std::string, std::string>;
  const std::vector<KV> want = {{"CHORUS_FUSION_THRESHOLD", "33554432"},
                                {"CHORUS_CYCLE_TIME", "0.5"},
                                {"CHORUS_CACHE_CAPACITY", "256"},
                                {"CHORUS_TIMELINE", "/tmp/tl.json"},
                                {"CHORUS_STALL_CHECK_TIME_SECONDS", "30"},
                                {"CHORUS_STALL_SHUTDOWN_TIME_SECONDS", "120"},
                                {"CHORUS_LOG_LEVEL", "debug"},
                                {"CHORUS_ALLREDUCE_ALGO", "ring"}};
  REQUIRE(r.options.knobs == want);
  const ParseResult off = parse({"-np", "2", "--no-stall-check", "prog"});
  REQUIRE(off.options.knobs == std::vector<KV>{{"CHORUS_STALL_CHECK_DISABLE", "1"}});
}

TEST_CASE("On/off flags are horovodrun's switches: alone they mean 1, a value may follow", "[launcher][options]") {
  using KV = std::pair<std::string, std::string>;
  const ParseResult alone = parse({"-np", "2", "--autotune", "--hierarchical-allreduce", "./train", "--lr", "1"});
  REQUIRE(alone.error.empty());
  REQUIRE(alone.options.knobs ==
          std::vector<KV>{{"CHORUS_HIERARCHICAL_ALLREDUCE", "1"}, {"CHORUS_AUTOTUNE", "1"}});
  REQUIRE(alone.options.command == std::vector<std::string>{"./train", "--lr", "1"});
  const ParseResult valued = parse({"-np", "2", "--autotune", "0", "--wake-on-enqueue=off", "-autotune-log-file",
                                    "/tmp/a.csv", "--timeline-mark-cycles", "true", "prog"});
  REQUIRE(valued.error.empty());
  REQUIRE(valued.options.knobs == std::vector<KV>{{"CHORUS_WAKE_ON_ENQUEUE", "off"},
                                                  {"CHORUS_TIMELINE_MARK_CYCLES", "true"},
                                                  {"CHORUS_AUTOTUNE", "0"},
                                                  {"CHORUS_AUTOTUNE_LOG", "/tmp/a.csv"}});
  REQUIRE(valued.options.command == std::vector<std::string>{"prog"});
  // A whole number is a switch value (> 0: on, as Horovod reads HOROVOD_AUTOTUNE=2), not the program.
  const ParseResult two = parse({"-np", "2", "--autotune", "2", "prog"});
  REQUIRE(two.error.empty());
  REQUIRE(two.options.knobs == std::vector<KV>{{"CHORUS_AUTOTUNE", "2"}});
  REQUIRE(two.options.command == std::vector<std::string>{"prog"});
  const ParseResult last = parse({"-np", "2", "--timeline-mark-cycles"});  // a switch last: still no program
  REQUIRE_THAT(last.error, Catch::Contains("no program"));
}

TEST_CASE("horovodrun's --gloo, --disable-cache and --version", "[launcher][options]") {
  const ParseResult gloo = parse({"-np", "2", "--gloo", "prog"});
  REQUIRE(gloo.error.empty());
  REQUIRE(gloo.options.tcp);
  using KV = std::pair<std::string, std::string>;
  const ParseResult cache = parse({"-np", "2", "--disable-cache", "prog"});
  REQUIRE(cache.error.empty());
  REQUIRE(cache.options.knobs == std::vector<KV>{{"CHORUS_CACHE_CAPACITY", "0"}});
  REQUIRE_THAT(parse({"-np", "2", "--disable-cache", "--cache-capacity", "8", "prog"}).error,
               Catch::Contains("contradicts"));
  const ParseResult version = parse({"--version"});
  REQUIRE(version.error.empty());
  REQUIRE_THAT(version.help_text, Catch::StartsWith("chorusrun (Chorus) ") && Catch::Contains(CHORUS_VERSION_STRING));
}

TEST_CASE("A config file supplies settings; the command line wins", "[launcher][options]") {
  const std::string path = "chorusrun_test_config.cfg";
  {
    std::ofstream f(path);
    f << "# tuned for the lab cluster\nnum-proc = 4\nfusion-threshold-mb = 16\ncycle-time-ms = 2\nverbose = true\n";
  }
  const ParseResult r = parse({"--config-file", path, "--cycle-time-ms", "0.25", "prog"});
  std::remove(path.c_str());
  REQUIRE(r.error.empty());
  REQUIRE(r.options.num_proc == 4);
  REQUIRE(r.options.verbose);
  REQUIRE(std::find(r.options.knobs.begin(), r.options.knobs.end(),
                    std::make_pair(std::string("CHORUS_CYCLE_TIME"), std::string("0.25"))) != r.options.knobs.end());
  REQUIRE(std::find(r.options.knobs.begin(), r.options.knobs.end(),
                    std::make_pair(std::string("CHORUS_FUSION_THRESHOLD"), std::string("16777216"))) !=
          r.options.knobs.end());
  REQUIRE_THAT(parse({"--config-file", "/no/such/file", "-np", "2", "prog"}).error, Catch::Contains("/no/such/file"));
}

TEST_CASE("A directory named as a config file or hostfile is an error naming it", "[launcher][options]") {
  // An ifstream opens a directory and reads it as empty: that must not pass.
  REQUIRE_THAT(parse({"--config-file", "/tmp", "-np", "2", "prog"}).error,
               Catch::Contains("config file '/tmp' is a directory"));
  REQUIRE_THAT(parse({"-np", "2", "--hostfile", "/tmp", "prog"}).error,
               Catch::Contains("hostfile '/tmp' is a directory"));
}

TEST_CASE("Bad input gets one clear error", "[launcher][options]") {
  REQUIRE_THAT(parse({"--bogus", "prog"}).error, Catch::Contains("--bogus"));
  REQUIRE_THAT(parse({"-np", "0", "prog"}).error, Catch::Contains("at least 1"));
  REQUIRE_THAT(parse({"-np", "two", "prog"}).error, Catch::Contains("('two') for option '--num-proc'"));
  REQUIRE_THAT(parse({"prog"}).error, Catch::Contains("missing -np"));
  REQUIRE_THAT(parse({"-np", "2"}).error, Catch::Contains("no program"));
  REQUIRE_THAT(parse({"-np", "2", "-H", "a:x", "prog"}).error, Catch::Contains("'a:x'"));
  REQUIRE_THAT(parse({"-np", "2", "-H", "a", "--hostfile", "f", "prog"}).error, Catch::Contains("not both"));
  REQUIRE_THAT(parse({"-np", "2", "--allreduce-algo", "fast", "prog"}).error, Catch::Contains("auto, ring, mpi or shm"));
  REQUIRE_THAT(parse({"-np", "2", "--fusion-threshold-mb", "-1", "prog"}).error, Catch::Contains(">= 0"));
  REQUIRE_THAT(parse({"-np", "2", "-x", "1BAD=2", "prog"}).error, Catch::Contains("not a variable name"));
  REQUIRE_THAT(parse({"-np", "2", "-p", "70000", "prog"}).error, Catch::Contains("not a port"));
  REQUIRE_THAT(parse({"-np", "2", "-i", "/my keys/id", "prog"}).error, Catch::Contains("containing spaces"));
  REQUIRE_THAT(parse({"-np", "2", "--mpi-args", "'unclosed", "prog"}).error, Catch::Contains("--mpi-args"));
  REQUIRE_THAT(parse({"-np", "2", "--no-stall-check", "--stall-check-warning-time-seconds", "5", "prog"}).error,
               Catch::Contains("contradicts"));
}

TEST_CASE("A local job: localhost slots, loopback only, root consent only as root", "[launcher][plan]") {
  const LaunchPlan p = plan_of({"-np", "4", "./train", "--lr", "0.1"});
  REQUIRE(p.all_local);
  REQUIRE(p.argv.front() == "/usr/bin/mpirun");
  REQUIRE(has_words(p.argv, {"-np", "4", "-H", "localhost:4", "-bind-to", "none", "-map-by", "slot"}));
  REQUIRE(has_words(p.argv, {"--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo"}));
  REQUIRE(std::find(p.argv.begin(), p.argv.end(), "--allow-run-as-root") == p.argv.end());
  REQUIRE(has_words(p.argv, {"./train", "--lr", "0.1"}));
  REQUIRE(p.argv.back() == "0.1");
  const LaunchPlan root = plan_of({"-np", "2", "./train"}, true);
  REQUIRE(root.argv[1] == "--allow-run-as-root");
  // This machine's own name counts as local; more ranks than slots oversubscribe.
  const LaunchPlan named = plan_of({"-np", "4", "-H", "node7:2", "./train"});
  REQUIRE(named.all_local);
  REQUIRE(named.oversubscribe);
  REQUIRE(std::find(named.argv.begin(), named.argv.end(), "--oversubscribe") != named.argv.end());
  // As many local ranks as cores or more: MPI must yield while it waits.
  const std::vector<std::string> yield = {"--mca", "mpi_yield_when_idle", "1"};
  REQUIRE(has_words(p.argv, yield));  // 4 ranks, 4 cores
  REQUIRE(has_words(plan_of({"-np", "5", "./train"}).argv, yield));
  REQUIRE_FALSE(has_words(plan_of({"-np", "3", "./train"}).argv, yield));
}

TEST_CASE("A remote job: no loopback binding, ssh settings, slot limit", "[launcher][plan]") {
  const LaunchPlan p = plan_of({"-np", "8", "-H", "a:4,b:4", "-p", "2222", "-i", "/keys/id", "--start-timeout", "30",
                                "./train"});
  REQUIRE_FALSE(p.all_local);
  REQUIRE(has_words(p.argv, {"-H", "a:4,b:4"}));
  REQUIRE(std::find(p.argv.begin(), p.argv.end(), "oob_tcp_if_include") == p.argv.end());
  REQUIRE(has_words(p.argv, {"--mca", "plm_rsh_args", "-p 2222 -i /keys/id"}));
  REQUIRE(has_words(p.argv, {"--mca", "orte_startup_timeout", "30"}));

  const ParseResult r = parse({"-np", "9", "-H", "a:4,b:4", "./train"});
  LaunchPlan too_many;
  REQUIRE_THAT(make_launch_plan(r.options, context(), &too_many),
               Catch::Contains("-np 9 is more ranks than the 8 slots of a:4,b:4"));
}

TEST_CASE("Environment: knobs, -x, malloc tuning unless the user set their own", "[launcher][plan]") {
  const LaunchPlan p = plan_of({"-np", "2", "-x", "PATH", "-x", "MY_FLAG=on", "--log-level", "info", "./train"});
  REQUIRE(has_words(p.argv, {"-x", "CHORUS_LOG_LEVEL=info"}));
  REQUIRE(has_words(p.argv, {"-x", "PATH"}));
  REQUIRE(has_words(p.argv, {"-x", "MY_FLAG=on"}));
  REQUIRE(has_words(p.argv, {"-x", std::string("GLIBC_TUNABLES=") + kTunedGlibcTunables}));

  const ParseResult r = parse({"-np", "2", "./train"});
  LaunchContext own = context();
  own.user_set_glibc_tunables = true;
  LaunchPlan q;
  REQUIRE(make_launch_plan(r.options, own, &q).empty());
  for (const auto& w : q.argv) REQUIRE(w.find("GLIBC_TUNABLES") == std::string::npos);
  const LaunchPlan off = plan_of({"-np", "2", "--no-malloc-tuning", "./train"});
  for (const auto& w : off.argv) REQUIRE(w.find("GLIBC_TUNABLES") == std::string::npos);
}

TEST_CASE("--mpi-args, --output-filename, and nothing reaches a shell", "[launcher][plan]") {
  const LaunchPlan p = plan_of({"-np", "2", "--mpi-args", "--mca btl ^openib --report-bindings",
                                "--output-filename", "/tmp/logs", "./train", "a; rm -rf /", "$(id)"});
  REQUIRE(has_words(p.argv, {"--mca", "btl", "^openib", "--report-bindings"}));
  REQUIRE(has_words(p.argv, {"--output-filename", "/tmp/logs"}));
  // Program arguments arrive as single, untouched words.
  REQUIRE(has_words(p.argv, {"./train", "a; rm -rf /", "$(id)"}));
  REQUIRE(quote_command({"prog", "a; rm -rf /", "it's"}) == "prog 'a; rm -rf /' 'it'\\''s'");
}

TEST_CASE("A local job runs each rank under the exit reporter; a remote one does not", "[launcher][plan]") {
  LaunchContext c = context();
  c.self_path = "/opt/chorus/bin/chorusrun";
  c.exit_hook_path = "/opt/chorus/lib/chorus/libchorusrun_exit_hook.so";
  c.exit_record_dir = "/tmp/chorusrun-exits-abc";
  LaunchPlan p;
  REQUIRE(make_launch_plan(parse({"-np", "2", "./train", "--lr", "0.1"}).options, c, &p).empty());
  REQUIRE(p.exit_record_dir == c.exit_record_dir);
  REQUIRE(has_words(p.argv, {c.self_path, "--rank-exit-reporter", c.exit_record_dir, c.exit_hook_path, "./train",
                             "--lr", "0.1"}));
  c.exit_hook_path = "";  // no hook found: the reporter still records how each rank ended
  REQUIRE(make_launch_plan(parse({"-np", "2", "./train"}).options, c, &p).empty());
  REQUIRE(has_words(p.argv, {"--rank-exit-reporter", c.exit_record_dir, "-", "./train"}));
  // Records left on other hosts never reach chorusrun: no reporter there.
  REQUIRE(make_launch_plan(parse({"-np", "2", "-H", "a:1,b:1", "./train"}).options, c, &p).empty());
  REQUIRE(p.exit_record_dir.empty());
  REQUIRE(std::find(p.argv.begin(), p.argv.end(), "--rank-exit-reporter") == p.argv.end());
  REQUIRE(make_launch_plan(parse({"-np", "2", "--no-exit-report", "./train"}).options, c, &p).empty());
  REQUIRE(p.exit_record_dir.empty());
  REQUIRE(std::find(p.argv.begin(), p.argv.end(), "--rank-exit-reporter") == p.argv.end());
}

TEST_CASE("A missing mpirun or program stops before anything starts", "[launcher][plan]") {
  const ParseResult r = parse({"-np", "2", "./nope"});
  LaunchContext c = context();
  c.program_path = "";
  LaunchPlan p;
  REQUIRE_THAT(make_launch_plan(r.options, c, &p), Catch::Contains("'./nope' was not found"));
  c.mpirun_path = "";  // both missing: the program is named
  REQUIRE_THAT(make_launch_plan(r.options, c, &p), Catch::Contains("'./nope' was not found"));
  c = context();
  c.mpirun_path = "";
  REQUIRE_THAT(make_launch_plan(r.options, c, &p), Catch::Contains("mpirun was not found"));
  REQUIRE_THAT(make_launch_plan(r.options, c, &p), Catch::Contains("--tcp"));
}

TEST_CASE("Under mpirun the job's secret is passed by name only", "[launcher][secret]") {
  const ParseResult r = parse({"-np", "2", "./train"});
  LaunchContext c = context();
  c.pass_secret = true;
  LaunchPlan p;
  REQUIRE(make_launch_plan(r.options, c, &p).empty());
  REQUIRE(has_words(p.argv, {"-x", "CHORUS_SECRET"}));
  for (const std::string& word : p.argv) REQUIRE(word.rfind("CHORUS_SECRET=", 0) == std::string::npos);
  REQUIRE_FALSE(has_words(plan_of({"-np", "2", "./train"}).argv, {"-x", "CHORUS_SECRET"}));
}
