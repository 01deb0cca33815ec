#pragma once
// What every C entry point shares: this thread's last error, status codes
// as chorus_error values, and guarded(), which turns any exception into a
// code (no C++ exception may cross extern "C").

#include <exception>
#include <string>

#include "chorus/c_api.h"
#include "chorus/error.h"

namespace chorus::detail {

inline thread_local std::string last_error;

inline int code_of(chorus::StatusCode code) {
  switch (code) {
    case chorus::StatusCode::kOk: return CHORUS_OK;
    case chorus::StatusCode::kPreconditionError: return CHORUS_ERR_PRECONDITION;
    case chorus::StatusCode::kAborted: return CHORUS_ERR_ABORTED;
    case chorus::StatusCode::kInvalidArgument: return CHORUS_ERR_INVALID_ARGUMENT;
    case chorus::StatusCode::kTimeout: return CHORUS_ERR_TIMEOUT;
    case chorus::StatusCode::kInternal: return CHORUS_ERR_INTERNAL;
    default: return CHORUS_ERR_UNKNOWN;
  }
}

inline int fail(int code, std::string message) {
  last_error = std::move(message);
  return code;
}

inline int fail(const chorus::Status& s) { return fail(code_of(s.code()), s.message()); }

// Runs `body` (returning an int result), turning any exception into a code.
template <class F>
int guarded(F&& body) {
  last_error.clear();
  try {
    return body();
  } catch (const chorus::Error& e) {
    return fail(e.status());
  } catch (const std::exception& e) {
    return fail(CHORUS_ERR_UNKNOWN, e.what());
  } catch (...) {
    return fail(CHORUS_ERR_UNKNOWN, "unknown exception");
  }
}

}  // namespace chorus::detail
