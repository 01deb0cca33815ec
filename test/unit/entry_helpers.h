#pragma once
// A tensor entry with only a name and a handle: what the queue tests need;
// a request with only a name, a shape and a rank: what the cache tests need.

#include <memory>
#include <string>

#include "engine/handle_state.h"
#include "engine/tensor_entry.h"

namespace chorus::test {

inline detail::TensorEntry entry(const std::string& name) {
  detail::TensorEntry e;
  e.request.name = name;
  e.handle = std::make_shared<detail::HandleState>();
  return e;
}

inline detail::Request req(const std::string& name, int64_t n = 8, int rank = 0) {
  detail::Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {n};
  return r;
}

}  // namespace chorus::test
