// chorusrun --tcp's pure part: options -> one command per rank.
#include <catch2/catch.hpp>

#include <algorithm>

#include "launch_options.h"
#include "tcp_launch_plan.h"

using namespace chorus::launcher;

namespace {

LaunchOptions tcp_options(std::vector<std::string> args) {
  args.insert(args.begin(), "chorusrun");
  ParseResult r = parse_command_line(args);
  REQUIRE(r.error.empty());
  REQUIRE(r.options.tcp);
  return r.options;
}

TcpLaunchContext tcp_context() {
  TcpLaunchContext c;
  c.local_host_names = {"node7", "node7.example"};
  c.program_path = "/abs/train";
  c.cwd = "/work dir";
  c.master_port = 29511;
  c.job_id = "job1";
  return c;
}

std::string env_of(const RankCommand& c, const std::string& name) {
  for (const auto& [n, v] : c.env) {
    if (n == name) return v;
  }
  return "(unset)";
}

}  // namespace

TEST_CASE("--tcp on one host: each rank runs the program with torchrun's variables", "[launcher][tcp]") {
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "3", "-x", "A=1", "./train", "--epochs", "2"}), tcp_context(),
                          &ranks) == "");
  REQUIRE(ranks.size() == 3);
  for (int r = 0; r < 3; ++r) {
    const RankCommand& c = ranks[static_cast<size_t>(r)];
    REQUIRE(c.local);
    REQUIRE(c.argv == std::vector<std::string>{"/abs/train", "--epochs", "2"});
    REQUIRE(env_of(c, "RANK") == std::to_string(r));
    REQUIRE(env_of(c, "LOCAL_RANK") == std::to_string(r));
    REQUIRE(env_of(c, "LOCAL_WORLD_SIZE") == "3");
    REQUIRE(env_of(c, "WORLD_SIZE") == "3");
    REQUIRE(env_of(c, "MASTER_ADDR") == "127.0.0.1");
    REQUIRE(env_of(c, "MASTER_PORT") == "29511");
    REQUIRE(env_of(c, "CHORUS_TRANSPORT") == "tcp");
    REQUIRE(env_of(c, "CHORUS_JOB_ID") == "job1");
    REQUIRE(env_of(c, "A") == "1");
  }
}

TEST_CASE("--tcp across hosts: remote ranks through the agent, rank 0's host reachable by name", "[launcher][tcp]") {
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "4", "-H", "localhost:2,b:2", "-p", "2222", "./train"}),
                          tcp_context(), &ranks) == "");
  REQUIRE(ranks.size() == 4);
  REQUIRE((ranks[0].local && ranks[1].local && !ranks[2].local && !ranks[3].local));
  REQUIRE(env_of(ranks[0], "MASTER_ADDR") == "node7");  // not "localhost": b must reach it
  REQUIRE(env_of(ranks[3], "LOCAL_RANK") == "1");
  const std::vector<std::string>& a = ranks[2].argv;
  REQUIRE(a.size() == 5);
  REQUIRE((a[0] == "ssh" && a[1] == "-p" && a[2] == "2222" && a[3] == "b"));
  REQUIRE(a[4].rfind("cd '/work dir' && exec env CHORUS_TRANSPORT=tcp MASTER_ADDR=node7 ", 0) == 0);
  REQUIRE(a[4].find(" RANK=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 ./train") != std::string::npos);

  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "--agent", "/bin/enter", "-np", "2", "-H", "a:1,b:1", "./train"}),
                          tcp_context(), &ranks) == "");
  REQUIRE((ranks[0].argv[0] == "/bin/enter" && ranks[0].argv[1] == "a"));
  REQUIRE(env_of(ranks[1], "MASTER_ADDR") == "a");
}

TEST_CASE("--tcp refuses more ranks than slots and a program that is not there", "[launcher][tcp]") {
  std::vector<RankCommand> ranks;
  REQUIRE_THAT(make_tcp_launch(tcp_options({"--tcp", "-np", "5", "-H", "a:2,b:2", "./train"}), tcp_context(), &ranks),
               Catch::Contains("-np 5 is more than the 4 slots"));
  TcpLaunchContext missing = tcp_context();
  missing.program_path = "";
  REQUIRE_THAT(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "./nothing"}), missing, &ranks),
               Catch::Contains("program './nothing' was not found"));
}
