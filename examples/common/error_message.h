#pragma once
/// \file error_message.h
/// The message of an exception for users: torch's errors (c10::Error) carry
/// a C++ backtrace in what(), which buries the one line that matters.

#include <exception>
#include <string>

#include <c10/util/Exception.h>

namespace chorus_examples {

inline std::string error_message(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace chorus_examples
