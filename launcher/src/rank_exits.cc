#include "rank_exits.h"

#include <dirent.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace chorus::launcher {

std::string format_rank_exit(const RankExit& e) {
  return std::string(e.signaled ? "signal " : "exit ") + std::to_string(e.value) + " " + std::to_string(e.time_ns);
}

std::optional<RankExit> parse_rank_exit(const std::string& line, int rank, RankExit::Source source) {
  std::istringstream in(line);
  std::string kind;
  RankExit e;
  if (!(in >> kind >> e.value >> e.time_ns) || (kind != "exit" && kind != "signal")) return std::nullopt;
  std::string rest;
  if (in >> rest) return std::nullopt;
  e.signaled = kind == "signal";
  if (e.value < 0 || e.value > 255 || e.time_ns < 0 || (e.signaled && e.value == 0)) return std::nullopt;
  e.rank = rank;
  e.source = source;
  return e;
}

std::string rank_exit_file(int rank, RankExit::Source source) {
  return "rank." + std::to_string(rank) + (source == RankExit::Source::kExitCall ? ".exit" : ".wait");
}

std::vector<RankExit> read_rank_exits(const std::string& dir) {
  std::vector<RankExit> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* entry = readdir(d)) {
    int rank = -1;
    char suffix[8] = {0};
    if (std::sscanf(entry->d_name, "rank.%d.%4s", &rank, suffix) != 2 || rank < 0) continue;
    const std::string s(suffix);
    if (s != "exit" && s != "wait") continue;
    const auto source = s == "exit" ? RankExit::Source::kExitCall : RankExit::Source::kWait;
    if (entry->d_name != rank_exit_file(rank, source)) continue;
    std::ifstream in(dir + "/" + entry->d_name);
    std::string line;
    std::getline(in, line);
    if (auto e = parse_rank_exit(line, rank, source)) out.push_back(*e);
  }
  closedir(d);
  return out;
}

std::optional<RankExit> first_failure(const std::vector<RankExit>& records) {
  // Per rank: its own error exit when it made one, else how its process ended.
  std::map<int, RankExit> failure_of;
  for (const RankExit& e : records) {
    if (!e.failed()) continue;
    auto [it, inserted] = failure_of.emplace(e.rank, e);
    if (!inserted && e.source == RankExit::Source::kExitCall) it->second = e;
  }
  std::optional<RankExit> first;
  for (const auto& [rank, e] : failure_of) {
    if (!first || e.time_ns < first->time_ns) first = e;  // map order: the lower rank wins a tie
  }
  return first;
}

std::string describe(const RankExit& e) {
  if (!e.signaled) return "rank " + std::to_string(e.rank) + " exited with code " + std::to_string(e.value);
  const char* name = strsignal(e.value);
  return "rank " + std::to_string(e.rank) + " was killed by signal " + std::to_string(e.value) +
         (name ? std::string(" (") + name + ")" : std::string());
}

std::string first_failure_line(const std::vector<RankExit>& records, int* exit_code) {
  const std::optional<RankExit> first = first_failure(records);
  if (!first) return "";
  int failed = 0;  // processes that ended badly (a rank's exit call and its end count once)
  for (const RankExit& e : records) failed += e.source == RankExit::Source::kWait && e.failed();
  *exit_code = first->exit_code();
  std::string line = describe(*first) + ", the first rank to fail";
  if (failed > 1) line += " (" + std::to_string(failed) + " ranks failed in all)";
  return line;
}

}  // namespace chorus::launcher
