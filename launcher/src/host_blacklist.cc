#include "host_blacklist.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

namespace chorus::launcher {

namespace {

HostBlacklist::Random01 default_random01() {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

}  // namespace

HostBlacklist::HostBlacklist(std::optional<CooldownRange> cooldown, Random01 random01)
    : cooldown_(cooldown), random01_(random01 ? std::move(random01) : default_random01()) {}

// The header's formula; ldexp saturates to infinity (then HI) rather than overflowing.
double HostBlacklist::cooldown_seconds(int times) {
  if (!cooldown_) return std::numeric_limits<double>::infinity();
  const double u = std::clamp(random01_(), 0.0, 1.0);
  return std::min(cooldown_->hi, std::ldexp(cooldown_->lo, times - 1) + u * cooldown_->lo);
}

bool HostBlacklist::record_failure(const std::string& host, double now) {
  if (is_blacklisted(host, now)) return false;
  Entry& e = hosts_[host];
  if (e.times == 0) e.order = static_cast<int>(hosts_.size());
  ++e.times;
  e.until = now + cooldown_seconds(e.times);
  return true;
}

bool HostBlacklist::is_blacklisted(const std::string& host, double now) const {
  const auto it = hosts_.find(host);
  return it != hosts_.end() && now < it->second.until;
}

std::vector<std::string> HostBlacklist::blacklisted_hosts(double now) const {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& [host, e] : hosts_) {
    if (now < e.until) out.emplace_back(e.order, host);
  }
  std::sort(out.begin(), out.end());
  std::vector<std::string> names;
  for (auto& [order, host] : out) names.push_back(std::move(host));
  return names;
}

std::optional<double> HostBlacklist::blacklisted_until(const std::string& host, double now) const {
  if (!is_blacklisted(host, now)) return std::nullopt;
  return hosts_.at(host).until;
}

std::optional<double> HostBlacklist::next_return(double now) const {
  std::optional<double> first;
  for (const auto& [host, e] : hosts_) {
    if (now < e.until && std::isfinite(e.until) && (!first || e.until < *first)) first = e.until;
  }
  return first;
}

int HostBlacklist::times_blacklisted(const std::string& host) const {
  const auto it = hosts_.find(host);
  return it == hosts_.end() ? 0 : it->second.times;
}

}  // namespace chorus::launcher
