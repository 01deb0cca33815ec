#pragma once
// The Chorus C ABI functions an adapter loaded by a framework calls (the
// TensorFlow ops, the JAX FFI handlers), bound at run time to the libchorus
// the Python package loaded, so the framework's calls and the package's
// other calls (chorus.torch, NumPy) share one runtime in the process,
// whichever libchorus CHORUS_LIBRARY chose.
#include <string>

#include "chorus/c_api.h"

namespace chorus::adapter {

struct ChorusFunctions {
#define CHORUS_ADAPTER_FUNCTION(name) decltype(&::name) name = nullptr
  CHORUS_ADAPTER_FUNCTION(chorus_allreduce_shaped_async);
  CHORUS_ADAPTER_FUNCTION(chorus_grouped_allreduce_async);
  CHORUS_ADAPTER_FUNCTION(chorus_grouped_allgather_async);
  CHORUS_ADAPTER_FUNCTION(chorus_grouped_reducescatter_async);
  CHORUS_ADAPTER_FUNCTION(chorus_broadcast_async_in_set);
  CHORUS_ADAPTER_FUNCTION(chorus_alltoall_async_in_set);
  CHORUS_ADAPTER_FUNCTION(chorus_received_splits);
  CHORUS_ADAPTER_FUNCTION(chorus_refuse_async);
  CHORUS_ADAPTER_FUNCTION(chorus_refuse_group_async);
  CHORUS_ADAPTER_FUNCTION(chorus_process_set_size);
  CHORUS_ADAPTER_FUNCTION(chorus_process_set_rank);
  CHORUS_ADAPTER_FUNCTION(chorus_barrier_in_set);
  CHORUS_ADAPTER_FUNCTION(chorus_join);
  CHORUS_ADAPTER_FUNCTION(chorus_wait);
  CHORUS_ADAPTER_FUNCTION(chorus_wait_completed);
  CHORUS_ADAPTER_FUNCTION(chorus_on_complete);
  CHORUS_ADAPTER_FUNCTION(chorus_last_error);
  CHORUS_ADAPTER_FUNCTION(chorus_abi_version);
#undef CHORUS_ADAPTER_FUNCTION
};

// The bound functions, or nullptr before bind_chorus_functions succeeded.
const ChorusFunctions* chorus_functions();

// Binds to the libchorus at `library_path` (already loaded by the caller):
// 0, or -1 with the reason in `error` (NUL-terminated, at most error_size
// bytes), which names `adapter` ("the TensorFlow ops").
int bind_chorus_functions(const char* library_path, const char* adapter, char* error, int error_size);

}  // namespace chorus::adapter
