#include "rendezvous/elastic_world_formation.h"

#include <algorithm>
#include <sstream>

namespace chorus::detail {

// A member's place among newcomers: when the launcher started it (it starts
// them in host order), else when it first asked (a member started by hand).
void WorldFormation::expect(const std::string& id) {
  members_.emplace(id, Member{});
  order_.emplace(id, ++start_order_);
}

void WorldFormation::joined(const std::string& id, double now) {
  Member& m = members_[id];
  order_.emplace(id, ++start_order_);
  if (m.state == State::kWaiting) return;
  m.state = State::kWaiting;
  m.asked_at = now;
}

void WorldFormation::gone(const std::string& id) {
  members_.erase(id);
  order_.erase(id);
}

void WorldFormation::adopt(int64_t version, const std::vector<std::string>& ids) {
  version_ = version;
  for (size_t r = 0; r < ids.size(); ++r) {
    Member& m = members_[ids[r]];
    m.state = State::kActive;
    m.rank = static_cast<int>(r);
  }
}

int WorldFormation::waiting_count() const {
  int n = 0;
  for (const auto& [id, m] : members_) n += m.state == State::kWaiting ? 1 : 0;
  return n;
}

// Only members that were not in the current world ask: the world runs on.
bool WorldFormation::newcomers_only_waiting() const {
  for (const auto& [id, m] : members_) {
    if (m.state == State::kWaiting && m.rank >= 0) return false;
  }
  return true;
}

// When the first member of the current world asked again (now if none did).
double WorldFormation::first_rejoin(double now) const {
  double first = now;
  for (const auto& [id, m] : members_) {
    if (m.state == State::kWaiting && m.rank >= 0) first = std::min(first, m.asked_at);
  }
  return first;
}

WorldFormation::Step WorldFormation::step(double now) {
  Step out;
  const int waiting = waiting_count();
  if (waiting == 0) return out;
  std::vector<std::string> active, starting;
  for (const auto& [id, m] : members_) {
    if (m.state == State::kActive) active.push_back(id);
    if (m.state == State::kStarting) starting.push_back(id);
  }
  if (!active.empty()) {
    if (newcomers_only_waiting()) {  // room for them: the world is smaller than max_np
      out.interrupt = !interrupted_ && static_cast<int>(active.size()) < settings_.max_np;
      interrupted_ = true;
    } else if (now - first_rejoin(now) >= settings_.join_grace_seconds) {
      out.late = active;
    }
    return out;
  }
  if (version_ == 0 && !starting.empty()) return out;  // the first world waits for every member started
  if (waiting < settings_.min_np) {
    if (below_min_since_ < 0) below_min_since_ = now;
    if (now - below_min_since_ >= settings_.elastic_timeout_seconds) {
      std::ostringstream why;
      why << "only " << waiting << " worker" << (waiting == 1 ? "" : "s") << " of the at least " << settings_.min_np
          << " asked (" << settings_.min_np_name << ") remained for " << settings_.elastic_timeout_seconds << " s ("
          << settings_.timeout_name << ")";
      out.failure = why.str();
    }
    return out;
  }
  below_min_since_ = -1;
  return form();
}

// The waiting members in rank order: the current world's by their rank,
// then newcomers in the order they were started (host order, as Horovod
// numbers ranks); at most max_np of them.
WorldFormation::Step WorldFormation::form() {
  std::vector<std::string> ids;
  for (const auto& [id, m] : members_) {
    if (m.state == State::kWaiting) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end(), [this](const std::string& a, const std::string& b) {
    const Member& ma = members_.at(a);
    const Member& mb = members_.at(b);
    if ((ma.rank >= 0) != (mb.rank >= 0)) return ma.rank >= 0;
    if (ma.rank >= 0) return ma.rank < mb.rank;
    return order_.at(a) < order_.at(b);
  });
  if (static_cast<int>(ids.size()) > settings_.max_np) ids.resize(static_cast<size_t>(settings_.max_np));
  for (auto& [id, m] : members_) m.rank = -1;
  for (size_t r = 0; r < ids.size(); ++r) {
    Member& m = members_.at(ids[r]);
    m.state = State::kActive;
    m.rank = static_cast<int>(r);
  }
  ++version_;
  interrupted_ = false;
  Step out;
  out.world = std::move(ids);
  return out;
}

}  // namespace chorus::detail
