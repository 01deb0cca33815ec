#pragma once
// Elastic training's blacklist: the hosts where a worker failed, kept out
// of the job (horovodrun's blacklist, horovod/runner/elastic/discovery.py).
// Pure: the time and the random draw are the caller's, so the rules are
// unit-tested without waiting.
//
// A host is blacklisted when a worker on it fails: it exits with a code
// other than 0, or a signal the driver did not send ends it (the caller
// decides which failures count; record_failure takes them all).
//
// Without a cooldown range a blacklisted host stays out for good. With
// --blacklist-cooldown-range LO HI (seconds) its n-th blacklisting (n = 1,
// 2, ...) lasts
//
//     min(HI, LO * 2^(n-1) + u * LO),  u uniform in [0, 1)
//
// so LO..2·LO the first time, then about twice as long each time, never
// more than HI (never less than LO): what Horovod's documentation
// describes (its code raises 2 to n, not n-1, so its first cooldown is
// already 2·LO..3·LO). Once its cooldown is over the host is retried; its
// count is kept, so failing again keeps it out longer. A failure while the
// host is out (another worker of the same host failing with it) does not
// count again, as in Horovod. LO = 0 makes every cooldown 0: a failing
// host is retried at once.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chorus::launcher {

/// --blacklist-cooldown-range LO HI, in seconds (0 <= lo <= hi).
struct CooldownRange {
  double lo = 0;
  double hi = 0;
  bool operator==(const CooldownRange& o) const { return lo == o.lo && hi == o.hi; }
};

class HostBlacklist {
 public:
  /// Draws u for a cooldown: uniform in [0, 1).
  using Random01 = std::function<double()>;

  /// `cooldown` empty: blacklisted hosts stay out. `random01` null: a
  /// generator seeded from std::random_device.
  explicit HostBlacklist(std::optional<CooldownRange> cooldown = std::nullopt, Random01 random01 = nullptr);

  /// A worker on `host` failed at `now` (seconds, any clock that only goes
  /// forward). Returns true when this put the host out, false when it was
  /// out already (then nothing changes).
  bool record_failure(const std::string& host, double now);

  bool is_blacklisted(const std::string& host, double now) const;
  /// The hosts out at `now`, in the order they were first blacklisted.
  std::vector<std::string> blacklisted_hosts(double now) const;
  /// When `host`, out at `now`, comes back: +infinity for good (no cooldown
  /// range); empty when it is not out.
  std::optional<double> blacklisted_until(const std::string& host, double now) const;
  /// The first time after `now` a host comes back (for the driver to look
  /// for it then); empty when none will.
  std::optional<double> next_return(double now) const;
  /// How many times `host` was blacklisted (each cooldown counts once).
  int times_blacklisted(const std::string& host) const;

 private:
  struct Entry {
    int times = 0;
    double until = 0;  // out while now < until
    int order = 0;     // when first blacklisted, for blacklisted_hosts()
  };
  double cooldown_seconds(int times);

  std::optional<CooldownRange> cooldown_;
  Random01 random01_;
  std::map<std::string, Entry> hosts_;
};

}  // namespace chorus::launcher
