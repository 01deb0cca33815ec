#include "chorus/status.h"

namespace chorus {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kUnknownError: return "UnknownError";
    case StatusCode::kPreconditionError: return "PreconditionError";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kInProgress: return "InProgress";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kInternal: return "Internal";
  }
  return "UnknownError";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace chorus
