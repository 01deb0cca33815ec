#pragma once
// Ranks as messages name them: "0, 2" and "rank 0" / "ranks 0, 2".

#include <string>
#include <vector>

namespace chorus::detail {

/// "0, 2".
inline std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return out;
}

/// "rank 0" or "ranks 0, 2".
inline std::string rank_list(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + ranks_text(ranks);
}

}  // namespace chorus::detail
