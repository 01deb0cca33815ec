#include "host_failure_budget.h"

#include <algorithm>

namespace chorus::launcher {

bool HostFailureBudget::record(const std::string& host, double now) {
  std::vector<double>& times = times_[host];
  times.erase(std::remove_if(times.begin(), times.end(), [&](double t) { return now - t >= window_seconds_; }),
              times.end());
  times.push_back(now);
  return static_cast<int>(times.size()) <= budget_;
}

int HostFailureBudget::failures(const std::string& host, double now) const {
  const auto it = times_.find(host);
  if (it == times_.end()) return 0;
  return static_cast<int>(
      std::count_if(it->second.begin(), it->second.end(), [&](double t) { return now - t < window_seconds_; }));
}

}  // namespace chorus::launcher
