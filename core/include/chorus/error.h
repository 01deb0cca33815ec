#pragma once
/// \file error.h
/// Exceptions thrown by the C++ API. Each carries the core's Status.

#include <stdexcept>

#include "chorus/status.h"

namespace chorus {

/// Base of every exception Chorus throws.
class CHORUS_API Error : public std::runtime_error {
 public:
  explicit Error(Status status);
  const Status& status() const { return status_; }

 private:
  Status status_;
};

/// Bad input, or inputs that disagree across ranks (dtype, shape, op, root, ...).
class CHORUS_API InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

/// Called in the wrong state: before init(), after shutdown().
class CHORUS_API PreconditionError : public Error {
 public:
  using Error::Error;
};

/// The runtime shut down (here or on another rank) before the operation completed.
class CHORUS_API AbortedError : public Error {
 public:
  using Error::Error;
};

/// A wait with a timeout ran out; the operation itself goes on.
class CHORUS_API TimeoutError : public Error {
 public:
  using Error::Error;
};

/// A broken invariant inside Chorus (a bug): the message says which.
class CHORUS_API InternalError : public Error {
 public:
  using Error::Error;
};

/// Throws the exception that matches `status`; does nothing when it is OK.
CHORUS_API void throw_if_error(const Status& status);

}  // namespace chorus
