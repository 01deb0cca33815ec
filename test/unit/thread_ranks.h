#pragma once
// In-process ranks for the data-plane algorithm tests: one thread per rank.

#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "chorus/status.h"

namespace chorus::test {

/// Runs body(rank) on `size` threads at once; returns what each returned,
/// in rank order. No Catch2 assertion may run inside `body` (Catch2 is not
/// thread-safe): return what is to be checked instead.
template <class Result, class Body>
std::vector<Result> on_thread_ranks(int size, Body body) {
  std::vector<Result> results(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([&, r] { results[static_cast<size_t>(r)] = body(r); });
  for (auto& t : threads) t.join();
  return results;
}

/// Runs body(rank) on `size` threads at once, joins them all, then rethrows
/// the first exception any of them threw.
template <class Body>
void on_thread_ranks_rethrowing(int size, Body body) {
  std::mutex mu;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

/// What one rank of a single-call test reports: the call's status and the
/// wrong elements it counted.
struct RankOutcome {
  Status status;
  int64_t wrong = 0;
};

inline int64_t total_wrong(const std::vector<RankOutcome>& outcomes) {
  int64_t total = 0;
  for (const RankOutcome& o : outcomes) total += o.wrong;
  return total;
}

inline int64_t total(const std::vector<int64_t>& counts) {
  int64_t sum = 0;
  for (int64_t c : counts) sum += c;
  return sum;
}

}  // namespace chorus::test
