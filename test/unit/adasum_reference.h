#pragma once
// A direct single-process Adasum, the reference for the data plane's tree:
// the pairwise formula on whole tensors in double, over the same tree
// (docs/api.md, "Adasum"): ranks r >= p (p the largest power of two <= n)
// first fold into rank r - p, then a balanced binary tree of contiguous
// blocks. Written from the formula, not from the algorithm's code.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace chorus::test {

using AdasumVector = std::vector<std::vector<double>>;  // one rank's tensors

// (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b, per tensor.
inline AdasumVector adasum_pair(const AdasumVector& a, const AdasumVector& b) {
  AdasumVector out = a;
  for (size_t t = 0; t < a.size(); ++t) {
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a[t].size(); ++i) {
      dot += a[t][i] * b[t][i];
      aa += a[t][i] * a[t][i];
      bb += b[t][i] * b[t][i];
    }
    const double ca = aa > 0 ? 1 - dot / (2 * aa) : 1, cb = bb > 0 ? 1 - dot / (2 * bb) : 1;
    for (size_t i = 0; i < a[t].size(); ++i) out[t][i] = ca * a[t][i] + cb * b[t][i];
  }
  return out;
}

inline AdasumVector adasum_balanced(const std::vector<AdasumVector>& v, size_t first, size_t n) {
  if (n == 1) return v[first];
  return adasum_pair(adasum_balanced(v, first, n / 2), adasum_balanced(v, first + n / 2, n / 2));
}

/// Every rank's tensors in, the reduced tensors out.
inline AdasumVector adasum_reference(std::vector<AdasumVector> ranks) {
  size_t p = 1;
  while (p * 2 <= ranks.size()) p *= 2;
  for (size_t r = 0; r + p < ranks.size(); ++r) ranks[r] = adasum_pair(ranks[r], ranks[r + p]);
  return adasum_balanced(ranks, 0, p);
}

/// Rank `rank`'s element i of tensor t: a part all ranks share (so dot
/// products are positive as well as negative) and a part of its own.
inline double adasum_input(int rank, int t, int64_t i) {
  return std::cos(0.11 * double(i) + t) + 0.7 * (1 + rank % 3) * std::sin(1.0 + 7.3 * rank + 1.7 * t + 0.37 * double(i));
}

/// Every rank's tensors of `counts` elements, from adasum_input.
inline std::vector<AdasumVector> adasum_inputs(int size, const std::vector<int64_t>& counts) {
  std::vector<AdasumVector> all(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    for (size_t t = 0; t < counts.size(); ++t) {
      std::vector<double> v(static_cast<size_t>(counts[t]));
      for (int64_t i = 0; i < counts[t]; ++i) v[static_cast<size_t>(i)] = adasum_input(r, int(t), i);
      all[static_cast<size_t>(r)].push_back(v);
    }
  }
  return all;
}

/// Largest |x| of a tensor, the scale its tolerance is relative to.
inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

}  // namespace chorus::test
