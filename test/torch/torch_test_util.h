#pragma once
// Helpers shared by the LibTorch adapter tests; include it instead of
// <catch2/catch.hpp> (and before it).

#include <torch/torch.h>

#include "chorus/torch.h"

// Debian's LibTorch logs through glog, whose CHECK would shadow Catch's.
#undef CHECK
#include <catch2/catch.hpp>

namespace torch_test {

/// Every rank's `t` (flattened), one row per rank.
inline torch::Tensor rows_of_all_ranks(const torch::Tensor& t, const std::string& name) {
  return chorus::allgather(t.detach().flatten().unsqueeze(0).contiguous(), name);
}

/// True when every rank holds exactly the same values of `t`.
inline bool same_on_all_ranks(const torch::Tensor& t, const std::string& name) {
  torch::Tensor rows = rows_of_all_ranks(t, name);
  return torch::equal(rows, rows[0].unsqueeze(0).expand_as(rows));
}

/// Largest absolute difference between two modules' parameters.
inline double max_parameter_difference(const torch::nn::Module& a, const torch::nn::Module& b) {
  auto pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  return worst;
}

}  // namespace torch_test
