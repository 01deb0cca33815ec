#pragma once
// How many worker failures a host of an elastic job may have before it is
// blacklisted (host_blacklist.h): a worker that dies while its host's other
// workers are healthy is more likely the worker's fault than the host's,
// so it is replaced there, up to `budget` failures within `window_seconds`;
// the next one blacklists the host. Pure: the caller passes the time.

#include <map>
#include <string>
#include <vector>

namespace chorus::launcher {

class HostFailureBudget {
 public:
  HostFailureBudget(int budget, double window_seconds) : budget_(budget), window_seconds_(window_seconds) {}

  /// A worker on `host` failed at `now`: true while the failures of the
  /// last window_seconds (this one included) are within the budget.
  bool record(const std::string& host, double now);
  /// The failures of `host` counted at `now` (those inside the window).
  int failures(const std::string& host, double now) const;
  int budget() const { return budget_; }
  double window_seconds() const { return window_seconds_; }

 private:
  int budget_;
  double window_seconds_;
  std::map<std::string, std::vector<double>> times_;
};

}  // namespace chorus::launcher
