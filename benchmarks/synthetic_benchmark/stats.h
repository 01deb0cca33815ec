#pragma once
/// \file stats.h
/// Mean and (population) standard deviation, as numpy's mean and std,
/// which Horovod's benchmark reports as mean +- 1.96 std.

#include <cmath>
#include <vector>

namespace chorus_examples {

struct MeanStd {
  double mean = 0;
  double std = 0;
};

inline MeanStd mean_std(const std::vector<double>& values) {
  MeanStd r;
  if (values.empty()) return r;
  for (double v : values) r.mean += v;
  r.mean /= static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - r.mean) * (v - r.mean);
  r.std = std::sqrt(squares / static_cast<double>(values.size()));
  return r;
}

}  // namespace chorus_examples
