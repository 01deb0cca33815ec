#pragma once
// Which process set a runtime engine serves. Inside a set, ranks are
// numbered 0..members-1; messages that name ranks translate them back to
// global ranks and say which set they are about.

#include <cstdint>
#include <string>
#include <vector>

namespace chorus::detail {

struct SetScope {
  int32_t id = 0;                ///< 0: the global set
  std::vector<int> world_ranks;  ///< global rank of each set rank; empty for the global set

  int world_rank(int set_rank) const {
    if (world_ranks.empty() || set_rank < 0 || set_rank >= static_cast<int>(world_ranks.size())) return set_rank;
    return world_ranks[static_cast<size_t>(set_rank)];
  }
  /// "process set 1 (ranks 0, 2)"; "the global process set" for id 0.
  std::string describe() const {
    if (id == 0) return "the global process set";
    std::string out = "process set " + std::to_string(id) + " (ranks ";
    for (size_t i = 0; i < world_ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(world_ranks[i]);
    return out + ")";
  }
  /// " in process set 1 (ranks 0, 2)", or "" for the global set: for messages
  /// that read the same as before process sets existed.
  std::string in_text() const { return id == 0 ? "" : " in " + describe(); }
};

}  // namespace chorus::detail
