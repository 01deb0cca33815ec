#include "engine/tensor_queue.h"

#include <algorithm>
#include <unordered_set>

namespace chorus::detail {

Status TensorQueue::refused(const TensorEntry* first) const {
  return Status(close_reason_.code(), collective_name(first ? first->request.type : CollectiveType::kAllreduce) +
                                          std::string(" of tensor '") + (first ? first->name() : std::string()) +
                                          "' refused: " + close_reason_.message());
}

Status TensorQueue::in_flight_error(const std::string& name) {
  return Status::invalid_argument("Tensor '" + name +
                                  "' is already in flight on this rank: a name may be "
                                  "enqueued again only after its previous operation completed");
}

void TensorQueue::added() {
  held_.store(entries_.size(), std::memory_order_relaxed);
  has_new_requests_.store(true, std::memory_order_release);
  notified_ = notified_ || wake_on_add_;
}

// The hot path of a backward pass: one tensor, one lookup.
Status TensorQueue::add(TensorEntry entry) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return refused(&entry);
    auto [it, inserted] = entries_.try_emplace(entry.name());
    if (!inserted) return in_flight_error(entry.name());
    new_requests_.push_back(entry.request);
    it->second = std::move(entry);
    added();
  }
  if (wake_on_add_) cv_.notify_one();
  return Status::ok();
}

Status TensorQueue::add(std::vector<TensorEntry> entries) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return refused(entries.empty() ? nullptr : &entries.front());
    std::unordered_set<std::string> batch;  // repeats within a group; one entry cannot repeat
    for (const auto& e : entries) {
      if (entries_.count(e.name()) || (entries.size() > 1 && !batch.insert(e.name()).second)) {
        return in_flight_error(e.name());
      }
    }
    for (auto& e : entries) {
      new_requests_.push_back(e.request);
      std::string name = e.name();
      entries_.emplace(std::move(name), std::move(e));
    }
    added();
  }
  if (wake_on_add_) cv_.notify_one();
  return Status::ok();
}

std::vector<Request> TensorQueue::take_new_requests() {
  if (!has_new_requests_.load(std::memory_order_acquire)) return {};  // a later poll sees it
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Request> out(std::make_move_iterator(new_requests_.begin()),
                           std::make_move_iterator(new_requests_.end()));
  new_requests_.clear();
  has_new_requests_.store(false, std::memory_order_relaxed);
  return out;
}

bool TensorQueue::request_of(const std::string& name, Request* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return false;
  *out = it->second.request;
  return true;
}

bool TensorQueue::take(const std::string& name, TensorEntry* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return false;
  *out = std::move(it->second);
  entries_.erase(it);
  held_.store(entries_.size(), std::memory_order_relaxed);
  return true;
}

std::vector<TensorEntry> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) {
    closed_ = true;
    close_reason_ = reason;
  }
  std::vector<TensorEntry> out;
  out.reserve(entries_.size());
  for (auto& [name, e] : entries_) out.push_back(std::move(e));
  entries_.clear();
  new_requests_.clear();
  held_.store(0, std::memory_order_relaxed);
  has_new_requests_.store(false, std::memory_order_relaxed);
  return out;
}

bool TensorQueue::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

size_t TensorQueue::in_flight() const { return held_.load(std::memory_order_relaxed); }

std::vector<std::string> TensorQueue::names_in_flight(size_t max) const {
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    names.reserve(entries_.size());
    for (const auto& kv : entries_) names.push_back(kv.first);
  }
  std::sort(names.begin(), names.end());
  if (names.size() > max) names.resize(max);
  return names;
}

void TensorQueue::wait_for_work(std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return notified_ || (wake_on_add_ && !new_requests_.empty()); });
  notified_ = false;
}

void TensorQueue::notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
  cv_.notify_one();
}

}  // namespace chorus::detail
