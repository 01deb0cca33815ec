// The C ABI's handles after a call: poll, wait (at once, with a timeout, or
// until completion without releasing), a completion callback and what an
// alltoall received.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "c_api/c_guard.h"
#include "c_api/c_handles.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace {

using chorus::Status;
using chorus::detail::fail;
using chorus::detail::guarded;
using chorus::detail::handles;

int unknown_handle(int64_t id) {
  return fail(CHORUS_ERR_UNKNOWN_HANDLE, "unknown chorus handle " + std::to_string(id) +
                                             " (never returned, or already waited for)");
}

// A wait of `timeout_seconds` on handle `id`: OK when it completed (its own
// status in *result), a timeout status when still pending, or a failure code.
int timed_wait(const char* function, int64_t id, double timeout_seconds, chorus::Handle* h, Status* result) {
  if (!handles().find(id, h)) return unknown_handle(id);
  if (!(timeout_seconds >= 0)) {  // also NaN
    return fail(CHORUS_ERR_INVALID_ARGUMENT,
                std::string(function) + ": timeout_seconds " + std::to_string(timeout_seconds) + " is negative");
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(std::min(timeout_seconds, 1e9)));
  try {
    h->wait(timeout);
    *result = Status::ok();
  } catch (const chorus::TimeoutError& e) {
    return fail(e.status());  // still pending
  } catch (const chorus::Error& e) {
    *result = e.status();
  }
  return CHORUS_OK;
}

}  // namespace

extern "C" {

int chorus_received_splits(int64_t handle, int64_t* splits, int n) {
  return guarded([&]() -> int {
    chorus::Handle h;
    if (!handles().find(handle, &h)) return unknown_handle(handle);
    if (!h.poll()) return fail(CHORUS_ERR_PRECONDITION, "chorus_received_splits: the operation has not completed");
    const std::vector<int64_t> got = h.received_splits();
    if (splits == nullptr || n < static_cast<int>(got.size())) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_received_splits: room for " + std::to_string(n) + " splits, " +
                                                   std::to_string(got.size()) + " needed");
    }
    for (size_t i = 0; i < got.size(); ++i) splits[i] = got[i];
    return static_cast<int>(got.size());
  });
}

int chorus_poll(int64_t handle) {
  return guarded([&]() -> int {
    chorus::Handle h;
    if (!handles().find(handle, &h)) return unknown_handle(handle);
    if (!h.poll()) return 0;
    const chorus::Status s = h.status();
    return s.is_ok() ? 1 : fail(s);
  });
}

int chorus_wait(int64_t handle) {
  return guarded([&]() -> int {
    chorus::Handle h;
    if (!handles().find(handle, &h)) return unknown_handle(handle);
    const chorus::Status s = h.wait_status();
    handles().erase(handle);
    return s.is_ok() ? CHORUS_OK : fail(s);
  });
}

int chorus_wait_timeout(int64_t handle, double timeout_seconds) {
  return guarded([&]() -> int {
    chorus::Handle h;
    Status result;
    const int rc = timed_wait("chorus_wait_timeout", handle, timeout_seconds, &h, &result);
    if (rc != CHORUS_OK) return rc;  // pending (the handle stays) or bad arguments
    handles().erase(handle);
    return result.is_ok() ? CHORUS_OK : fail(result);
  });
}

int chorus_wait_completed(int64_t handle, double timeout_seconds) {
  return guarded([&]() -> int {
    chorus::Handle h;
    Status result;
    const int rc = timed_wait("chorus_wait_completed", handle, timeout_seconds, &h, &result);
    return rc != CHORUS_OK ? rc : 1;
  });
}

int chorus_on_complete(int64_t handle, chorus_done_fn fn, void* user_data) {
  return guarded([&]() -> int {
    if (fn == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_on_complete: fn is NULL");
    chorus::Handle h;
    if (!handles().find(handle, &h)) return unknown_handle(handle);
    h.on_complete([handle, fn, user_data](const Status&) { fn(user_data, handle); });
    return CHORUS_OK;
  });
}

}  // extern "C"
