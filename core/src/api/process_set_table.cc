#include "api/process_set_table.h"

#include "chorus/error.h"
#include "common/set_scope.h"

namespace chorus::detail {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

std::string describe(const ProcessSet& set) {
  SetScope scope{set.id(), set.ranks()};
  return scope.describe();
}

}  // namespace

int32_t ProcessSetTable::next_id() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++last_id_;
}

void ProcessSetTable::add(const ProcessSet& set, std::shared_ptr<Engine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  sets_[set.id()] = Registered{set, std::move(engine)};
}

const ProcessSetTable::Registered& ProcessSetTable::lookup(int32_t id, const std::string& what) const {
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    invalid(what + "process set " + std::to_string(id) +
            " is not registered (never added, removed, or made before an elastic reset: register it again after "
            "each reset)");
  }
  return it->second;
}

std::shared_ptr<Engine> ProcessSetTable::engine(const ProcessSet& set, int global_rank, const std::string& what) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Registered& r = lookup(set.id(), what);
  // Ids count from 1 in every world: a set of an earlier world (elastic)
  // may name an id now registered for other ranks (horovod#4021).
  if (!set.is_global() && !set.ranks().empty() && set.ranks() != r.set.ranks()) {
    invalid(what + "this process set's ranks differ from " + describe(r.set) +
            ", registered under its id now: a set made before an elastic reset? register it again after each reset");
  }
  if (!r.engine) {
    invalid(what + "rank " + std::to_string(global_rank) + " is not a member of " + describe(r.set) +
            "; only members may run its collectives");
  }
  return r.engine;
}

ProcessSet ProcessSetTable::find(int32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return lookup(id, "").set;
}

std::shared_ptr<Engine> ProcessSetTable::remove(const ProcessSet& set, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Engine> engine = lookup(set.id(), what).engine;
  sets_.erase(set.id());
  return engine;
}

std::vector<ProcessSet> ProcessSetTable::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProcessSet> out;
  for (const auto& [id, r] : sets_) out.push_back(r.set);
  return out;
}

std::vector<std::pair<int32_t, std::shared_ptr<Engine>>> ProcessSetTable::member_engines() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<int32_t, std::shared_ptr<Engine>>> out;
  for (const auto& [id, r] : sets_) {
    if (r.engine) out.emplace_back(id, r.engine);
  }
  return out;
}

void ProcessSetTable::clear() {
  std::map<int32_t, Registered> sets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets.swap(sets_);
  }
  for (auto& [id, r] : sets) {
    if (r.engine) r.engine->shutdown();
  }
}

}  // namespace chorus::detail
