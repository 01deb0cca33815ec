#pragma once
// One execution of a Chorus FFI handler: the Chorus operations it started
// and how they end. XLA's result buffers are allocated before the call, so
// an operation whose output size the ranks agree on (allgather,
// reducescatter, alltoall) writes into the result it was traced with, and
// a size the trace did not foresee fails the call naming both sizes.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "call_frame.h"

namespace chorus::jax {

// A result buffer as Chorus's allocation callback sees it.
struct ResultSlot {
  void* data = nullptr;
  int64_t bytes = 0;
  std::string name;       // the collective's, for the error
  std::string* mismatch;  // where a wrong size is told (the call's)
  std::mutex* mu;
};

class HandlerCall {
 public:
  explicit HandlerCall(const CallFrame& frame) : frame_(frame) {}

  // Result slots for operations that allocate through a callback, one per
  // result, kept alive by this call until every handle completed.
  std::vector<ResultSlot>& slots_for_results(const std::vector<std::string>& names);

  // The error a submit call (rc < 0, nothing started) or a wait made.
  XLA_FFI_Error* failed(int rc);
  // Waits for every handle (each is released); the first error is returned.
  XLA_FFI_Error* wait_all(const std::vector<int64_t>& handles);
  XLA_FFI_Error* error(XLA_FFI_Error_Code code, const std::string& message) const {
    return frame_.error(code, message);
  }
  // Frees an error this call made and does not return.
  void destroy(XLA_FFI_Error* error) const;

  static void* place_result(void* slot, int64_t bytes, const int64_t* shape, int ndim);
  // Where a result slot of this call tells a wrong size, and its lock.
  std::string* mismatch() { return &mismatch_; }
  std::mutex* mutex() { return &mu_; }

 private:
  const CallFrame& frame_;
  std::vector<ResultSlot> slots_;
  std::string mismatch_;
  std::mutex mu_;
};

// The XLA error code of a Chorus error code.
XLA_FFI_Error_Code xla_code_of(int chorus_rc);

}  // namespace chorus::jax
