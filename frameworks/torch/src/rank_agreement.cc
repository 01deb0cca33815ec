#include "rank_agreement.h"

#include <map>
#include <sstream>

#include <torch/torch.h>

#include "chorus/chorus.h"
#include "chorus/torch/ops.h"

namespace chorus {
namespace torch_adapter {

namespace {

// FNV-1a over the items with a separator: the same in every process.
int64_t fingerprint(const std::vector<std::string>& items) {
  uint64_t h = 1469598103934665603ull;
  for (const std::string& item : items) {
    for (unsigned char c : item) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

}  // namespace

void check_same_on_all_ranks(const std::vector<std::string>& items, const std::string& what,
                             const ProcessSet& process_set) {
  torch::Tensor mine = torch::tensor({static_cast<int64_t>(items.size()), fingerprint(items)}, torch::kInt64);
  torch::Tensor all = chorus::allgather(mine.reshape({1, 2}), what + ".agreement", process_set);
  auto a = all.accessor<int64_t, 2>();
  std::map<std::pair<int64_t, int64_t>, std::vector<int>> ranks_by_list;
  for (int r = 0; r < all.size(0); ++r) {
    const int global = process_set.is_global() ? r : process_set.ranks()[static_cast<size_t>(r)];
    ranks_by_list[{a[r][0], a[r][1]}].push_back(global);
  }
  if (ranks_by_list.size() == 1) return;
  std::ostringstream msg;
  msg << what << ": the ranks passed different lists of tensors:";
  for (const auto& [list, ranks] : ranks_by_list) {
    msg << (ranks.size() == 1 ? " rank" : " ranks");
    for (size_t i = 0; i < ranks.size(); ++i) msg << (i ? ", " : " ") << ranks[i];
    msg << (ranks.size() == 1 ? " has " : " have ") << list.first << " (fingerprint " << std::hex << list.second
        << std::dec << ");";
  }
  msg << " every rank must pass the same names in the same order";
  throw InvalidArgumentError(Status::invalid_argument(msg.str()));
}

}  // namespace torch_adapter
}  // namespace chorus
