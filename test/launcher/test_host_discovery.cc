// Elastic training's host discovery: the script's output, and running it.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "host_discovery.h"

using namespace chorus::launcher;

namespace {

// A folder of small scripts, removed with everything in it.
class ScriptDir {
 public:
  ScriptDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "chorus_discovery_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScriptDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0755) const {
    const std::string path = path_ + "/" + name;
    std::ofstream(path) << text;
    REQUIRE(chmod(path.c_str(), mode) == 0);
    return path;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("Discovery output: host or host:slots a line, in order", "[launcher][discovery]") {
  const DiscoveryResult r = parse_discovery_output("node1\nnode2:4\n\n   10.0.0.3:2  \r\n\t\n", 3);
  REQUIRE(r.error.empty());
  REQUIRE(r.warnings.empty());
  REQUIRE(r.hosts == std::vector<HostSlots>{{"node1", 3}, {"node2", 4}, {"10.0.0.3", 2}});
  REQUIRE(parse_discovery_output("b\na", 1).hosts == std::vector<HostSlots>{{"b", 1}, {"a", 1}});  // no final newline
}

TEST_CASE("Discovery output: no hosts is not an error", "[launcher][discovery]") {
  for (const char* text : {"", "\n", "  \n\t\n"}) {
    const DiscoveryResult r = parse_discovery_output(text, 1);
    REQUIRE(r.error.empty());
    REQUIRE(r.hosts.empty());
  }
}

TEST_CASE("Discovery output: a malformed line is an error naming it", "[launcher][discovery]") {
  REQUIRE(parse_discovery_output("a\nbad host\n", 1).error ==
          "line 2 'bad host': not host or host:slots (a host name is dot-separated letters, digits, '-' and '_')");
  for (const char* bad : {"a:0", "a:x", "a:-2", "a:", "a:2:3", "a: 2"}) {
    INFO(bad);
    const DiscoveryResult r = parse_discovery_output(std::string("ok\n") + bad + "\n", 1);
    REQUIRE_THAT(r.error, Catch::StartsWith("line 2 '" + std::string(bad) + "': the slot count"));
    REQUIRE(r.hosts.empty());
  }
  for (const char* bad : {":4", "a,b", "$(reboot)", "a..b", "-a"}) {
    INFO(bad);
    REQUIRE_THAT(parse_discovery_output(bad, 1).error, Catch::Contains("not host or host:slots"));
  }
}

TEST_CASE("Discovery output: a host listed twice is one host, with a warning", "[launcher][discovery]") {
  const DiscoveryResult r = parse_discovery_output("a:2\nb\na:3\nc\nb\na\n", 1);
  REQUIRE(r.error.empty());
  REQUIRE(r.hosts == std::vector<HostSlots>{{"a", 6}, {"b", 2}, {"c", 1}});
  REQUIRE(r.warnings == std::vector<std::string>{
                            "host 'a' is listed on lines 1, 3 and 6: taken as one host with their slots added up (6)",
                            "host 'b' is listed on lines 2 and 5: taken as one host with their slots added up (2)"});
}

TEST_CASE("Running the discovery script: its hosts, and its stderr ignored on success", "[launcher][discovery]") {
  const ScriptDir dir;
  const std::string script = dir.write("ok.sh", "#!/bin/sh\necho node1:2\necho 'just a note' >&2\necho node2\n");
  const DiscoveryResult r = run_discovery_script(script, 4, 10);
  REQUIRE(r.error.empty());
  REQUIRE(r.hosts == std::vector<HostSlots>{{"node1", 2}, {"node2", 4}});
  REQUIRE(run_discovery_script(dir.write("none.sh", "#!/bin/sh\nexit 0\n"), 1, 10).hosts.empty());
}

TEST_CASE("Running the discovery script: a missing, unusable or failing script", "[launcher][discovery]") {
  const ScriptDir dir;
  const std::string missing = dir.path() + "/missing.sh";
  REQUIRE(run_discovery_script(missing, 1, 10).error == "host discovery script '" + missing + "' does not exist");
  const std::string plain = dir.write("plain.sh", "#!/bin/sh\necho a\n", 0644);
  REQUIRE_THAT(run_discovery_script(plain, 1, 10).error,
               Catch::StartsWith("host discovery script '" + plain + "' is not executable"));
  REQUIRE_THAT(run_discovery_script(dir.path(), 1, 10).error, Catch::Contains("is a directory"));
  const std::string no_interpreter = dir.write("no_shebang", "echo a\n");
  REQUIRE_THAT(run_discovery_script(no_interpreter, 1, 10).error,
               Catch::Contains("'" + no_interpreter + "' could not be started: Exec format error"));

  const std::string fails = dir.write(
      "fails.sh", "#!/bin/sh\necho a:2\necho 'looking up the pool' >&2\necho 'error: token expired' >&2\nexit 3\n");
  const DiscoveryResult r = run_discovery_script(fails, 1, 10);
  REQUIRE(r.hosts.empty());
  REQUIRE(r.error == "host discovery script '" + fails +
                         "' exited with code 3; its stderr ends: looking up the pool | error: token expired");
  const std::string quiet = dir.write("quiet.sh", "#!/bin/sh\nexit 1\n");
  REQUIRE_THAT(run_discovery_script(quiet, 1, 10).error,
               Catch::EndsWith("exited with code 1 (and wrote nothing to stderr)"));
  const std::string killed = dir.write("killed.sh", "#!/bin/sh\nkill -9 $$\n");
  REQUIRE_THAT(run_discovery_script(killed, 1, 10).error, Catch::Contains("was killed by signal 9"));
}

TEST_CASE("Running the discovery script: only the last lines of a long stderr", "[launcher][discovery]") {
  const ScriptDir dir;
  const std::string script =
      dir.write("noisy.sh", "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do echo \"line $i\" >&2; done\nexit 2\n");
  REQUIRE_THAT(run_discovery_script(script, 1, 10).error,
               Catch::EndsWith("its stderr ends: line 4 | line 5 | line 6 | line 7 | line 8"));
}

TEST_CASE("Running the discovery script: malformed output and a host twice", "[launcher][discovery]") {
  const ScriptDir dir;
  const std::string garbage = dir.write("garbage.sh", "#!/bin/sh\necho node1\necho 'Traceback (most recent call)'\n");
  const DiscoveryResult bad = run_discovery_script(garbage, 1, 10);
  REQUIRE(bad.hosts.empty());
  REQUIRE_THAT(bad.error, Catch::StartsWith("host discovery script '" + garbage +
                                            "': line 2 'Traceback (most recent call)': not host or host:slots"));
  const std::string twice = dir.write("twice.sh", "#!/bin/sh\necho a:2\necho b:1\necho a:2\n");
  const DiscoveryResult r = run_discovery_script(twice, 1, 10);
  REQUIRE(r.error.empty());
  REQUIRE(r.hosts == std::vector<HostSlots>{{"a", 4}, {"b", 1}});
  REQUIRE(r.warnings.size() == 1);
  REQUIRE_THAT(r.warnings[0], Catch::StartsWith("host discovery script '" + twice + "': host 'a'") &&
                                  Catch::Contains("lines 1 and 3"));
}

TEST_CASE("Running the discovery script: killed at the timeout, what it started too", "[launcher][discovery]") {
  const ScriptDir dir;
  const std::string marker = dir.path() + "/survived";
  // The sleep is the script's child: the kill must reach it, or it would touch the marker.
  const std::string slow =
      dir.write("slow.sh", "#!/bin/sh\necho a\necho 'asking the scheduler' >&2\nsleep 1\ntouch " + marker + "\n");
  const auto start = std::chrono::steady_clock::now();
  const DiscoveryResult r = run_discovery_script(slow, 1, 0.5);
  const double took = seconds_since(start);
  REQUIRE(r.hosts.empty());
  REQUIRE(r.error == "host discovery script '" + slow +
                         "' did not finish within 0.5 s, so it was killed; its stderr ends: asking the scheduler");
  REQUIRE(took >= 0.5);
  REQUIRE(took < 2.0);
  usleep(1200 * 1000);  // past the sleep's end
  REQUIRE_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("Running the discovery script: a background process holding its stdout", "[launcher][discovery]") {
  const ScriptDir dir;
  // It ended; what it left behind keeps the pipe open: read for 1 s more, then go on.
  const std::string script = dir.write("daemon.sh", "#!/bin/sh\necho a:2\nsleep 3 &\n");
  const auto start = std::chrono::steady_clock::now();
  const DiscoveryResult r = run_discovery_script(script, 1, 10);
  REQUIRE(r.error.empty());
  REQUIRE(r.hosts == std::vector<HostSlots>{{"a", 2}});
  REQUIRE(seconds_since(start) < 2.5);
}

TEST_CASE("Running the discovery script: stopped when the caller says so", "[launcher][discovery]") {
  const ScriptDir dir;
  const std::string slow = dir.write("slow.sh", "#!/bin/sh\nsleep 5\n");
  const auto start = std::chrono::steady_clock::now();
  const DiscoveryResult r = run_discovery_script(slow, 1, 10, [&] { return seconds_since(start) > 0.2; });
  REQUIRE(r.error == "host discovery script '" + slow + "' was stopped before it finished");
  REQUIRE(seconds_since(start) < 1.5);
}
