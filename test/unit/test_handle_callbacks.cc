// Completion callbacks (Handle::on_complete, chorus_on_complete): each runs
// exactly once, with the result, whichever of registration and completion
// comes first; once the result is set it runs at once on the registering
// thread, before that on the thread that completes the handle.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "chorus/handle.h"
#include "engine/handle_state.h"

using namespace chorus;
using chorus::detail::HandleState;

TEST_CASE("A completion callback runs once whichever comes first", "[handle][callbacks]") {
  const int rounds = 500;
  std::atomic<int> calls{0}, ok_results{0};
  for (int i = 0; i < rounds; ++i) {
    auto state = std::make_shared<HandleState>();
    std::thread completer([&] {
      state->set_result(Status::ok());
      state->notify();
    });
    state->on_complete([&](const Status& s) {
      calls.fetch_add(1);
      if (s.is_ok()) ok_results.fetch_add(1);
    });
    completer.join();
    state->notify();  // a second notify runs nothing again
  }
  CHECK(calls.load() == rounds);
  CHECK(ok_results.load() == rounds);
}

TEST_CASE("A callback registered after the result runs at once, on the caller", "[handle][callbacks]") {
  auto state = std::make_shared<HandleState>();
  state->set_result(Status::aborted("gone"));  // set, not yet notified
  std::thread::id ran_on;
  Status seen;
  state->on_complete([&](const Status& s) {
    ran_on = std::this_thread::get_id();
    seen = s;
  });
  CHECK(ran_on == std::this_thread::get_id());
  CHECK(seen.code() == StatusCode::kAborted);
  int later = 0;
  state->notify();
  state->on_complete([&](const Status&) { ++later; });
  CHECK(later == 1);
}

TEST_CASE("A callback registered before completion runs on the completing thread", "[handle][callbacks]") {
  auto state = std::make_shared<HandleState>();
  std::thread::id ran_on;
  state->on_complete([&](const Status&) { ran_on = std::this_thread::get_id(); });
  CHECK(ran_on == std::thread::id());  // pending: not run yet
  std::thread::id completer_id;
  std::thread completer([&] {
    completer_id = std::this_thread::get_id();
    state->set_result(Status::ok());
    state->notify();
  });
  completer.join();
  CHECK(ran_on == completer_id);
}
