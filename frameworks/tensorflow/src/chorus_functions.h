#pragma once
// The Chorus C ABI functions the ops call, bound at run time to the
// libchorus the Python package loaded (chorus_tf_bind), so TensorFlow's
// ops and the package's other calls (chorus.torch, NumPy) share one
// runtime in the process, whichever libchorus CHORUS_LIBRARY chose.
#include <string>

#include "chorus/c_api.h"

namespace chorus::tf {

struct ChorusFunctions {
#define CHORUS_TF_FUNCTION(name) decltype(&::name) name = nullptr
  CHORUS_TF_FUNCTION(chorus_allreduce_shaped_async);
  CHORUS_TF_FUNCTION(chorus_grouped_allreduce_async);
  CHORUS_TF_FUNCTION(chorus_grouped_allgather_async);
  CHORUS_TF_FUNCTION(chorus_grouped_reducescatter_async);
  CHORUS_TF_FUNCTION(chorus_broadcast_async_in_set);
  CHORUS_TF_FUNCTION(chorus_alltoall_async_in_set);
  CHORUS_TF_FUNCTION(chorus_received_splits);
  CHORUS_TF_FUNCTION(chorus_process_set_size);
  CHORUS_TF_FUNCTION(chorus_barrier_in_set);
  CHORUS_TF_FUNCTION(chorus_join);
  CHORUS_TF_FUNCTION(chorus_wait);
  CHORUS_TF_FUNCTION(chorus_wait_completed);
  CHORUS_TF_FUNCTION(chorus_last_error);
  CHORUS_TF_FUNCTION(chorus_abi_version);
#undef CHORUS_TF_FUNCTION
};

// The bound functions, or nullptr before chorus_tf_bind succeeded.
const ChorusFunctions* chorus_functions();

}  // namespace chorus::tf

extern "C" {
// Binds the ops to the libchorus at `library_path` (already loaded by the
// caller). 0, or -1 with the reason in `error` (NUL-terminated, at most
// error_size bytes).
__attribute__((visibility("default"))) int chorus_tf_bind(const char* library_path, char* error, int error_size);
}
