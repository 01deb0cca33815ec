// Binds an adapter to the libchorus the Python package loaded.
#include "chorus_functions.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

namespace chorus::adapter {

namespace {

std::atomic<const ChorusFunctions*> bound{nullptr};

// The C ABI version whose functions the adapters call (chorus_on_complete: 16).
constexpr int kNeededAbi = 16;

std::string bind(const char* library_path, const char* adapter, ChorusFunctions* f) {
  if (library_path == nullptr) return "no library path";
  void* library = dlopen(library_path, RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return std::string(library_path) + " is not loaded in this process";
  std::string missing;
#define CHORUS_ADAPTER_BIND(name)                                       \
  f->name = reinterpret_cast<decltype(f->name)>(dlsym(library, #name)); \
  if (f->name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name
  CHORUS_ADAPTER_BIND(chorus_allreduce_shaped_async);
  CHORUS_ADAPTER_BIND(chorus_grouped_allreduce_async);
  CHORUS_ADAPTER_BIND(chorus_grouped_allgather_async);
  CHORUS_ADAPTER_BIND(chorus_grouped_reducescatter_async);
  CHORUS_ADAPTER_BIND(chorus_broadcast_async_in_set);
  CHORUS_ADAPTER_BIND(chorus_alltoall_async_in_set);
  CHORUS_ADAPTER_BIND(chorus_received_splits);
  CHORUS_ADAPTER_BIND(chorus_refuse_async);
  CHORUS_ADAPTER_BIND(chorus_refuse_group_async);
  CHORUS_ADAPTER_BIND(chorus_process_set_size);
  CHORUS_ADAPTER_BIND(chorus_process_set_rank);
  CHORUS_ADAPTER_BIND(chorus_barrier_in_set);
  CHORUS_ADAPTER_BIND(chorus_join);
  CHORUS_ADAPTER_BIND(chorus_wait);
  CHORUS_ADAPTER_BIND(chorus_wait_completed);
  CHORUS_ADAPTER_BIND(chorus_on_complete);
  CHORUS_ADAPTER_BIND(chorus_last_error);
  CHORUS_ADAPTER_BIND(chorus_abi_version);
#undef CHORUS_ADAPTER_BIND
  // The handle stays open: the functions must outlive every call.
  if (!missing.empty()) return std::string(library_path) + " lacks " + missing;
  if (f->chorus_abi_version() < kNeededAbi) {
    return std::string(library_path) + " has C ABI version " + std::to_string(f->chorus_abi_version()) + "; " +
           adapter + " need " + std::to_string(kNeededAbi);
  }
  return "";
}

}  // namespace

const ChorusFunctions* chorus_functions() { return bound.load(std::memory_order_acquire); }

int bind_chorus_functions(const char* library_path, const char* adapter, char* error, int error_size) {
  auto* functions = new ChorusFunctions();  // kept for the process's life
  const std::string why = bind(library_path, adapter, functions);
  if (!why.empty()) {
    delete functions;
    if (error != nullptr && error_size > 0) {
      std::strncpy(error, why.c_str(), static_cast<size_t>(error_size) - 1);
      error[error_size - 1] = '\0';
    }
    return -1;
  }
  bound.store(functions, std::memory_order_release);
  return 0;
}

}  // namespace chorus::adapter
