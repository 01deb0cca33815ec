#include "handler_call.h"

#include "chorus_functions.h"

namespace chorus::jax {

using adapter::chorus_functions;

XLA_FFI_Error_Code xla_code_of(int chorus_rc) {
  switch (chorus_rc) {
    case CHORUS_ERR_INVALID_ARGUMENT: return XLA_FFI_Error_Code_INVALID_ARGUMENT;
    case CHORUS_ERR_PRECONDITION: return XLA_FFI_Error_Code_FAILED_PRECONDITION;
    case CHORUS_ERR_ABORTED: return XLA_FFI_Error_Code_ABORTED;
    case CHORUS_ERR_TIMEOUT: return XLA_FFI_Error_Code_DEADLINE_EXCEEDED;
    case CHORUS_ERR_INTERNAL: return XLA_FFI_Error_Code_INTERNAL;
    default: return XLA_FFI_Error_Code_UNKNOWN;
  }
}

std::vector<ResultSlot>& HandlerCall::slots_for_results(const std::vector<std::string>& names) {
  const std::vector<XLA_FFI_Buffer*>& results = frame_.results();
  slots_.clear();
  for (size_t i = 0; i < results.size(); ++i) {
    const XLA_FFI_Buffer& r = *results[i];
    slots_.push_back(ResultSlot{r.data, element_count(r) * static_cast<int64_t>(element_bytes(r.dtype)),
                                i < names.size() ? names[i] : names.back(), &mismatch_, &mu_});
  }
  return slots_;
}

// Chorus's allocation callback (on its background thread): the traced
// result when the agreed size is the traced one, else NULL (the operation
// fails) with both sizes told.
void* HandlerCall::place_result(void* slot, int64_t bytes, const int64_t* shape, int ndim) {
  auto* s = static_cast<ResultSlot*>(slot);
  if (bytes == s->bytes) return s->data;
  std::string dims;
  for (int d = 0; d < ndim; ++d) dims += (d ? ", " : "") + std::to_string(shape[d]);
  std::lock_guard<std::mutex> lock(*s->mu);
  if (s->mismatch->empty()) {
    *s->mismatch = "chorus.jax: '" + s->name + "': the ranks' inputs make a result of shape (" + dims + ") and " +
                   std::to_string(bytes) + " bytes, but it was traced for " + std::to_string(s->bytes) +
                   " bytes: inside jax.jit every rank's first dimension must be the one traced (equal on every rank)";
  }
  return nullptr;
}

void HandlerCall::destroy(XLA_FFI_Error* error) const {
  XLA_FFI_Error_Destroy_Args args{};
  args.struct_size = XLA_FFI_Error_Destroy_Args_STRUCT_SIZE;
  args.error = error;
  frame_.api()->XLA_FFI_Error_Destroy(&args);
}

XLA_FFI_Error* HandlerCall::failed(int rc) {
  return frame_.error(xla_code_of(rc), chorus_functions()->chorus_last_error());
}

XLA_FFI_Error* HandlerCall::wait_all(const std::vector<int64_t>& handles) {
  int first_rc = 0;
  std::string first_message;
  for (int64_t h : handles) {  // every handle is waited for: each must be released
    const int rc = chorus_functions()->chorus_wait(h);
    if (rc < 0 && first_rc == 0) {
      first_rc = rc;
      first_message = chorus_functions()->chorus_last_error();
    }
  }
  if (first_rc == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return frame_.error(xla_code_of(first_rc), mismatch_.empty() ? first_message : mismatch_);
}

}  // namespace chorus::jax
