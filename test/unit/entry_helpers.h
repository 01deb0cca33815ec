#pragma once
// A tensor entry with only a name and a handle: what the queue tests need.

#include <memory>
#include <string>

#include "runtime/handle_state.h"
#include "runtime/tensor_entry.h"

namespace chorus::test {

inline detail::TensorEntry entry(const std::string& name) {
  detail::TensorEntry e;
  e.request.name = name;
  e.handle = std::make_shared<detail::HandleState>();
  return e;
}

}  // namespace chorus::test
