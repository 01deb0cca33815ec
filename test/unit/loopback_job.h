#pragma once
// Runs a function on N in-process ranks, each a thread with its own Runtime
// over the loopback backend. Catch2 assertions are not thread-safe, so rank
// bodies report failures by throwing; the caller's thread rethrows them.

#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "chorus/runtime.h"
#include "comm/loopback/loopback_backend.h"
#include "api/runtime_access.h"
#include "thread_ranks.h"

namespace chorus::test {

#define RANK_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::ostringstream _m;                                                             \
      _m << __FILE__ << ":" << __LINE__ << ": check failed: " #cond;                     \
      throw std::runtime_error(_m.str());                                                \
    }                                                                                    \
  } while (0)

inline RuntimeOptions quiet_options() {
  RuntimeOptions o;
  o.log_level = LogLevel::kError;
  o.stall_check_seconds = 0;
  return o;
}

/// Options with the stall check at `warn` seconds and the stall shutdown at `shutdown`.
inline RuntimeOptions stall_options(double warn, double shutdown) {
  RuntimeOptions o;
  o.stall_check_seconds = warn;
  o.stall_shutdown_seconds = shutdown;
  return o;
}

/// Starts `size` runtimes on `world`; runs body(runtime, rank) on each in its
/// own thread; destroys the runtimes; rethrows the first failure.
template <class Body>
void run_ranks(std::shared_ptr<detail::LoopbackWorld> world, int size, Body body, RuntimeOptions options) {
  std::vector<std::unique_ptr<Runtime>> runtimes;
  for (int r = 0; r < size; ++r) {
    runtimes.push_back(detail::RuntimeAccess::make(detail::make_loopback_backend(world, r), options));
  }
  // The runtimes end before a failure is rethrown: a rank stopped in a
  // collective does not keep the others waiting.
  std::exception_ptr failure;
  try {
    on_thread_ranks_rethrowing(size, [&](int r) { body(*runtimes[static_cast<size_t>(r)], r); });
  } catch (...) {
    failure = std::current_exception();
  }
  runtimes.clear();
  if (failure) std::rethrow_exception(failure);
}

/// The same on a world of its own, whose ranks play `ranks_per_host` ranks
/// a host (0: all on one host).
template <class Body>
void run_ranks(int size, Body body, RuntimeOptions options = quiet_options(), int ranks_per_host = 0) {
  run_ranks(detail::make_loopback_world(size, ranks_per_host), size, body, options);
}

}  // namespace chorus::test
