#pragma once
// StatusOr<T>: a value, or the Status that says why there is none. Internal
// functions that produce something and can fail return one, instead of an
// out-parameter plus an error string (or an empty string meaning "fine").

#include <cassert>
#include <optional>
#include <utility>

#include "chorus/status.h"

namespace chorus::detail {

template <class T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as a return value
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit, as a return value
    assert(!status_.is_ok() && "a StatusOr without a value needs a failed Status");
    if (status_.is_ok()) status_ = Status::internal("a StatusOr was given an OK status and no value");
  }

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  /// The value; only when is_ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  /// The value, or `fallback` when there is none.
  T value_or(T fallback) && { return value_ ? std::move(*value_) : std::move(fallback); }

 private:
  Status status_;  // OK whenever there is a value
  std::optional<T> value_;
};

}  // namespace chorus::detail
