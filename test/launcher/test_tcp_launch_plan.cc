// chorusrun --tcp's pure part: options -> one command per rank.
#include <catch2/catch.hpp>

#include <algorithm>

#include "host_machines.h"
#include "job_secret.h"
#include "launch_options.h"
#include "launch_plan.h"
#include "rank_group_runner.h"
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

// A resolver of its own, so no test depends on /etc/hosts or DNS: b has
// two names, node7-eth0 is this machine's outside address, an address
// resolves to itself (as getaddrinfo does), "nosuch" to nothing.
Resolution fake_resolve(const std::string& host) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> table = {{"a", {"10.0.0.1"}},
                                                                               {"b", {"10.0.0.2", "fd00::2"}},
                                                                               {"b.example", {"fd00::2"}},
                                                                               {"node7-eth0", {"10.0.0.7"}},
                                                                               {"localhost", {"127.0.0.1", "::1"}}};
  for (const auto& [name, addresses] : table) {
    if (name == host) return {addresses, ""};
  }
  if (host.find_first_not_of("0123456789.") == std::string::npos) return {{host}, ""};
  return {{}, "Name or service not known"};
}

TcpLaunchContext tcp_context() {
  TcpLaunchContext c;
  c.local_host_names = {"node7", "node7.example"};
  c.local_addresses = {"127.0.0.1", "10.0.0.7", "::1"};
  c.resolve = fake_resolve;
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
    REQUIRE(env_of(c, "HOROVOD_RANK") == std::to_string(r));  // horovodrun --gloo's names
    REQUIRE(env_of(c, "HOROVOD_SIZE") == "3");
    REQUIRE(env_of(c, "HOROVOD_LOCAL_RANK") == std::to_string(r));
    REQUIRE(env_of(c, "HOROVOD_LOCAL_SIZE") == "3");
    REQUIRE(env_of(c, "HOROVOD_CROSS_RANK") == "0");
    REQUIRE(env_of(c, "HOROVOD_CROSS_SIZE") == "1");
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
  REQUIRE((env_of(ranks[1], "HOROVOD_CROSS_RANK") == "0" && env_of(ranks[2], "HOROVOD_CROSS_RANK") == "1"));
  REQUIRE(env_of(ranks[3], "HOROVOD_CROSS_SIZE") == "2");
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

TEST_CASE("--tcp: LOCAL_RANK counts the ranks of one machine, however the host list names it", "[launcher][tcp]") {
  // localhost, 127.0.0.1 and node7 (this machine's name) are one machine of
  // 4 slots, at its first place: ranks 0-3 here, rank 4 on b.
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "5", "-H", "localhost:1,b:2,127.0.0.1:1,node7:2", "./train"}),
                          tcp_context(), &ranks) == "");
  REQUIRE(ranks.size() == 5);
  const std::vector<std::string> local_rank = {"0", "1", "2", "3", "0"}, local_size = {"4", "4", "4", "4", "1"};
  for (size_t r = 0; r < ranks.size(); ++r) {
    CHECK(env_of(ranks[r], "LOCAL_RANK") == local_rank[r]);
    CHECK(env_of(ranks[r], "LOCAL_WORLD_SIZE") == local_size[r]);
    CHECK(env_of(ranks[r], "HOROVOD_LOCAL_SIZE") == local_size[r]);
    CHECK(env_of(ranks[r], "HOROVOD_CROSS_RANK") == (r < 4 ? "0" : "1"));
    CHECK(env_of(ranks[r], "HOROVOD_CROSS_SIZE") == "2");
    CHECK(ranks[r].local == (r < 4));
  }
  CHECK(ranks[4].host == "b");
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "-H", "localhost:1,127.0.0.1:1", "./train"}),
                          tcp_context(), &ranks) == "");
  CHECK((env_of(ranks[1], "LOCAL_RANK") == "1" && env_of(ranks[1], "LOCAL_WORLD_SIZE") == "2"));
  CHECK(env_of(ranks[1], "MASTER_ADDR") == "127.0.0.1");
}

TEST_CASE("--tcp: names that resolve to one address are one machine", "[launcher][tcp]") {
  // b, b.example (its IPv6 address only) and b's IPv4 address: one remote
  // machine, reached by its first spelling.
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "3", "-H", "b:1,b.example:1,10.0.0.2:1", "./train"}),
                          tcp_context(), &ranks) == "");
  REQUIRE(ranks.size() == 3);
  for (size_t r = 0; r < 3; ++r) {
    CHECK(ranks[r].host == "b");
    CHECK_FALSE(ranks[r].local);
    CHECK(env_of(ranks[r], "LOCAL_RANK") == std::to_string(r));
    CHECK(env_of(ranks[r], "LOCAL_WORLD_SIZE") == "3");
    CHECK(env_of(ranks[r], "HOROVOD_CROSS_SIZE") == "1");
    CHECK(env_of(ranks[r], "MASTER_ADDR") == "b");
  }
  // An address of this machine's interfaces is this machine: run here, not through ssh.
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "4", "-H", "node7-eth0:1,a:2,10.0.0.7:1", "./train"}),
                          tcp_context(), &ranks) == "");
  CHECK((ranks[0].local && ranks[1].local && !ranks[2].local && !ranks[3].local));
  CHECK((ranks[0].host == "node7-eth0" && ranks[2].host == "a"));
  CHECK((env_of(ranks[1], "LOCAL_RANK") == "1" && env_of(ranks[1], "LOCAL_WORLD_SIZE") == "2"));
  CHECK((env_of(ranks[3], "LOCAL_RANK") == "1" && env_of(ranks[3], "HOROVOD_CROSS_RANK") == "1"));
  CHECK(env_of(ranks[3], "MASTER_ADDR") == "node7-eth0");  // a reaches rank 0 by the name the list gave
  // Its first name in the list that is not loopback; with none, its own name.
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "3", "-H", "localhost:1,a:1,10.0.0.7:1", "./train"}),
                          tcp_context(), &ranks) == "");
  CHECK(env_of(ranks[1], "MASTER_ADDR") == "10.0.0.7");
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "-H", "127.0.0.1:1,a:1", "./train"}), tcp_context(),
                          &ranks) == "");
  CHECK(env_of(ranks[1], "MASTER_ADDR") == "node7");
}

TEST_CASE("--tcp: a host listed twice is one host whose slots add up at its first place", "[launcher][tcp]") {
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "4", "-H", "a:1,b:2,a:1", "./train"}), tcp_context(), &ranks) ==
          "");
  const std::vector<std::string> host = {"a", "a", "b", "b"}, local_rank = {"0", "1", "0", "1"};
  for (size_t r = 0; r < 4; ++r) {
    CHECK(ranks[r].host == host[r]);
    CHECK(env_of(ranks[r], "LOCAL_RANK") == local_rank[r]);
    CHECK(env_of(ranks[r], "LOCAL_WORLD_SIZE") == "2");
    CHECK(env_of(ranks[r], "HOROVOD_CROSS_RANK") == (r < 2 ? "0" : "1"));
  }
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "4", "-H", "a:2,a:2", "./train"}), tcp_context(), &ranks) == "");
  CHECK(env_of(ranks[3], "LOCAL_RANK") == "3");
  REQUIRE_THAT(make_tcp_launch(tcp_options({"--tcp", "-np", "5", "-H", "a:2,a:2", "./train"}), tcp_context(), &ranks),
               Catch::Contains("-np 5 is more than the 4 slots"));
}

TEST_CASE("--tcp: a host that does not resolve is an error naming it", "[launcher][tcp]") {
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "-H", "a:1,nosuch:1", "./train"}), tcp_context(), &ranks) ==
          "host 'nosuch' of the host list does not resolve (Name or service not known)");
  REQUIRE(ranks.empty());
  // This machine's own name needs no resolving (it may be missing from /etc/hosts).
  TcpLaunchContext c = tcp_context();
  c.resolve = [](const std::string&) { return Resolution{{}, "Name or service not known"}; };
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "-H", "node7:1,localhost:1", "./train"}), c, &ranks) == "");
  CHECK(env_of(ranks[1], "LOCAL_WORLD_SIZE") == "2");
}

TEST_CASE("group_by_machine: machines in order of first mention, slots summed", "[launcher][tcp]") {
  std::vector<Machine> machines;
  const std::vector<HostSlots> hosts = {{"b.example", 1}, {"localhost", 2}, {"a", 1}, {"b", 3}, {"10.0.0.7", 1}};
  REQUIRE(group_by_machine(hosts, {"node7"}, {"10.0.0.7"}, fake_resolve, &machines) == "");
  REQUIRE(machines == std::vector<Machine>{{"b.example", 4, false, "b.example"},
                                           {"localhost", 3, true, "10.0.0.7"},
                                           {"a", 1, false, "a"}});
  // Without a resolver, names are compared as spelled.
  REQUIRE(group_by_machine(hosts, {"node7"}, {}, nullptr, &machines) == "");
  REQUIRE(machines.size() == 5);
}

TEST_CASE("resolve_host and local_addresses ask the system", "[launcher][tcp]") {
  const Resolution r = resolve_host("127.0.0.1");
  REQUIRE(r.error.empty());
  REQUIRE(r.addresses == std::vector<std::string>{"127.0.0.1"});
  const std::vector<std::string> mine = local_addresses();
  REQUIRE(std::find(mine.begin(), mine.end(), "127.0.0.1") != mine.end());
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

TEST_CASE("--tcp: --start-timeout is the rendezvous timeout, malloc tuning as under mpirun", "[launcher][tcp]") {
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "--start-timeout", "7", "./train"}), tcp_context(),
                          &ranks) == "");
  REQUIRE(env_of(ranks[1], "CHORUS_RENDEZVOUS_TIMEOUT_SECONDS") == "7");
  REQUIRE(env_of(ranks[1], "GLIBC_TUNABLES") == kTunedGlibcTunables);
  REQUIRE_THAT(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "--start-timeout", "7",
                                            "--rendezvous-timeout-seconds", "9", "./train"}),
                               tcp_context(), &ranks),
               Catch::Contains("--start-timeout and --rendezvous-timeout-seconds"));
  REQUIRE_THAT(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "--start-timeout", "999999", "./train"}),
                               tcp_context(), &ranks),
               Catch::StartsWith("--start-timeout 999999: "));
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "--no-malloc-tuning", "./train"}), tcp_context(), &ranks) == "");
  REQUIRE(env_of(ranks[0], "GLIBC_TUNABLES") == "(unset)");
  TcpLaunchContext users = tcp_context();
  users.user_set_glibc_tunables = true;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "./train"}), users, &ranks) == "");
  REQUIRE(env_of(ranks[0], "GLIBC_TUNABLES") == "(unset)");  // the user's own reaches the ranks unchanged
}

TEST_CASE("--tcp: local ranks record their exit through the hook, remote ones do not", "[launcher][tcp]") {
  TcpLaunchContext c = tcp_context();
  c.exit_record_dir = "/tmp/records";
  c.exit_hook_path = "/lib/hook.so";
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "3", "-H", "localhost:2,b:1", "./train"}), c, &ranks) == "");
  REQUIRE(ranks[1].exit_record == "/tmp/records/rank.1.exit");
  REQUIRE(ranks[1].exit_hook == "/lib/hook.so");
  REQUIRE(ranks[2].exit_record.empty());
  c.exit_hook_path = "";  // no hook found: the runner's own view of each exit only
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "2", "./train"}), c, &ranks) == "");
  REQUIRE(ranks[0].exit_record.empty());
}

TEST_CASE("--tcp refuses mpirun's own flags and ssh's beside another agent", "[launcher][tcp]") {
  auto error_of = [](std::vector<std::string> args) {
    args.insert(args.begin(), "chorusrun");
    return parse_command_line(args).error;
  };
  REQUIRE_THAT(error_of({"--tcp", "-np", "2", "--mpi-args", "-v", "./train"}), Catch::Contains("--mpi-args goes to mpirun"));
  REQUIRE_THAT(error_of({"-np", "2", "--agent", "x", "./train"}), Catch::Contains("--agent only applies with --tcp"));
  REQUIRE_THAT(error_of({"--tcp", "-np", "2", "--agent", "x", "-i", "k", "./train"}),
               Catch::Contains("-p and -i are ssh's options"));
  REQUIRE(error_of({"--tcp", "-np", "2", "-p", "2222", "-i", "k", "./train"}).empty());  // ssh by default
  REQUIRE(error_of({"--tcp", "-np", "2", "-i", "my key", "./train"}).empty());  // ssh gets it as one argument
}

TEST_CASE("--tcp's exit code: the rank that failed first by its own exit call", "[launcher][tcp]") {
  auto wait = [](int rank, int value, int64_t t, bool signaled = false) {
    RankExit e;
    e.rank = rank;
    e.value = value;
    e.time_ns = t;
    e.signaled = signaled;
    return e;
  };
  RankGroupOutcome outcome;
  outcome.exits = {wait(1, 1, 100), wait(2, 1, 110), wait(0, 3, 150)};  // rank 0 ended last ...
  RankExit call = wait(0, 3, 90);  // ... but chose its code first
  call.source = RankExit::Source::kExitCall;
  std::string report;
  REQUIRE(rank_group_exit_code(outcome, {call}, &report) == 3);
  REQUIRE(report == "rank 0 exited with code 3, the first rank to fail (3 ranks failed in all)");
  REQUIRE(rank_group_exit_code(outcome, {}, &report) == 1);  // without the record: the first to end
  REQUIRE(report.rfind("rank 1 exited with code 1", 0) == 0);

  outcome.exits = {wait(0, 9, 100, true), wait(1, 0, 110)};
  REQUIRE(rank_group_exit_code(outcome, {}, &report) == 137);
  REQUIRE(report == "rank 0 was killed by signal 9 (Killed), the first rank to fail");

  outcome.received_signal = 15;  // told to stop: nobody is blamed
  REQUIRE(rank_group_exit_code(outcome, {}, &report) == 143);
  REQUIRE(report.find("stopped by signal 15") != std::string::npos);
  REQUIRE(report.find("first rank to fail") == std::string::npos);

  outcome.unstarted_rank = 2;
  outcome.start_error = "Too many open files";
  REQUIRE(rank_group_exit_code(outcome, {}, &report) == 127);
  REQUIRE(report == "rank 2 could not be started (Too many open files), so the job was ended");

  RankGroupOutcome clean;
  clean.exits = {wait(0, 0, 1), wait(1, 0, 2)};
  REQUIRE(rank_group_exit_code(clean, {}, &report) == 0);
  REQUIRE(report.empty());
}

TEST_CASE("--tcp: the job's secret in local ranks' environments, on remote ranks' stdin, on no command line",
          "[launcher][tcp][secret]") {
  TcpLaunchContext c = tcp_context();
  std::string error;
  c.secret = make_job_secret(&error);
  REQUIRE(error.empty());
  REQUIRE(c.secret.size() == 64);  // 256 bits in hex
  REQUIRE(c.secret.find_first_not_of("0123456789abcdef") == std::string::npos);
  REQUIRE(make_job_secret(&error) != c.secret);
  std::vector<RankCommand> ranks;
  REQUIRE(make_tcp_launch(tcp_options({"--tcp", "-np", "4", "-H", "localhost:2,b:2", "./train"}), c, &ranks) == "");
  for (const RankCommand& r : ranks) {
    for (const std::string& word : r.argv) REQUIRE(word.find(c.secret) == std::string::npos);
    if (r.local) {
      REQUIRE(env_of(r, "CHORUS_SECRET") == c.secret);
      REQUIRE(r.stdin_text.empty());
    } else {
      REQUIRE(r.stdin_text == c.secret + "\n");
      REQUIRE(r.argv.back().rfind("cd '/work dir' && IFS= read -r CHORUS_SECRET && export CHORUS_SECRET && exec env ",
                                  0) == 0);
    }
  }
}
