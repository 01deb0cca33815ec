#include "chorus/error.h"

#include "chorus/version.h"

namespace chorus {

Error::Error(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {}

void throw_if_error(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return;
    case StatusCode::kInvalidArgument: throw InvalidArgumentError(status);
    case StatusCode::kPreconditionError: throw PreconditionError(status);
    case StatusCode::kAborted: throw AbortedError(status);
    case StatusCode::kTimeout: throw TimeoutError(status);
    case StatusCode::kInternal: throw InternalError(status);
    default: throw Error(status);
  }
}

const char* version() { return CHORUS_VERSION_STRING; }

}  // namespace chorus
