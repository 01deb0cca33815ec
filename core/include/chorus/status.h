#pragma once
/// \file status.h
/// Status: the error currency inside Chorus. The C++ API turns a non-OK Status
/// into a chorus::Error exception; the C ABI turns it into an integer code.

#include <string>
#include <utility>

#include "chorus/export.h"

namespace chorus {

/// Why an operation failed. The numeric values are part of the C ABI
/// (negated, they are the codes `chorus_*` functions return).
enum class StatusCode : int {
  kOk = 0,
  kUnknownError = 1,
  kPreconditionError = 2,  ///< e.g. not initialized, already shut down
  kAborted = 3,            ///< the runtime shut down before the operation completed
  kInvalidArgument = 4,    ///< bad input, or inputs that disagree across ranks
  kInProgress = 5,         ///< not an error: the operation has not finished yet
  kTimeout = 6,            ///< a wait ran out of time (the operation goes on)
  kInternal = 7,           ///< a broken invariant inside Chorus: a bug, please report it
};

/// Result of an operation: a code and a message that names what went wrong.
class CHORUS_API Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status unknown_error(std::string msg) { return {StatusCode::kUnknownError, std::move(msg)}; }
  static Status precondition_error(std::string msg) { return {StatusCode::kPreconditionError, std::move(msg)}; }
  static Status aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status in_progress() { return {StatusCode::kInProgress, ""}; }
  static Status timeout(std::string msg) { return {StatusCode::kTimeout, std::move(msg)}; }
  /// A broken invariant (a bug in Chorus, not in the caller). The message
  /// starts with "internal: " so that a log line alone tells it apart.
  static Status internal(const std::string& msg) { return {StatusCode::kInternal, "internal: " + msg}; }

  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "InvalidArgument: <message>", or "OK".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// Name of a code, e.g. "InvalidArgument".
CHORUS_API const char* status_code_name(StatusCode code);

}  // namespace chorus
