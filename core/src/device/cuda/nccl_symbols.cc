#include "device/cuda/nccl_symbols.h"

#include <dlfcn.h>

#include <memory>

#include "device/cuda/gpu_errors.h"

namespace chorus::detail::gpu {

std::string nccl_version_text(int code) {
  const bool old_scheme = code < 20900;  // NCCL_VERSION(2,8,x) was 2000 + 800 + x
  const int major = old_scheme ? code / 1000 : code / 10000;
  const int minor = old_scheme ? (code % 1000) / 100 : (code % 10000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

Status check_nccl_version(int runtime_code, int header_code, const std::string& library) {
  const std::string loaded = "NCCL " + nccl_version_text(runtime_code) + " (" + library + ")";
  if (runtime_code < kMinNcclVersion) {
    return Status::precondition_error(loaded + " is too old: the GPU data plane needs NCCL " +
                                      nccl_version_text(kMinNcclVersion) +
                                      " or newer; point LD_LIBRARY_PATH at a newer libnccl.so.2");
  }
  const int runtime_major = runtime_code / 10000, header_major = header_code / 10000;
  if (runtime_major != header_major) {
    return Status::precondition_error(loaded + " has another major version than the NCCL " +
                                      nccl_version_text(header_code) + " Chorus was built against");
  }
  return Status::ok();
}

SymbolLookup process_symbol_lookup() {
  return [](const char* name) { return dlsym(RTLD_DEFAULT, name); };
}

SymbolLookup library_symbol_lookup(const std::string& path, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + path + ": " + (why != nullptr ? why : "dlopen failed");
    return nullptr;
  }
  std::shared_ptr<void> library(handle, [](void* h) { dlclose(h); });
  return [library](const char* name) { return dlsym(library.get(), name); };
}

std::string library_of(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "library of unknown path";
  return info.dli_fname;
}

NcclSymbols NcclSymbols::load(const SymbolLookup& lookup, int version_code, std::string library) {
  NcclSymbols s;
  s.version_code_ = version_code;
  s.library_ = std::move(library);
  s.shrink_ = reinterpret_cast<ShrinkFn>(lookup("ncclCommShrink"));
  s.window_register_ = reinterpret_cast<WindowRegisterFn>(lookup("ncclCommWindowRegister"));
  s.window_deregister_ = reinterpret_cast<WindowDeregisterFn>(lookup("ncclCommWindowDeregister"));
  return s;
}

Status NcclSymbols::missing(const std::string& feature, const char* symbol, int needed) const {
  return Status::precondition_error(feature + " needs " + symbol + " (NCCL " + nccl_version_text(needed) +
                                    " or newer), which the loaded NCCL " + nccl_version_text(version_code_) +
                                    " (" + library_ + ") does not have");
}

Status NcclSymbols::require_shrink(const std::string& feature) const {
  if (shrink_ == nullptr) return missing(feature, "ncclCommShrink", kNcclShrinkVersion);
  return Status::ok();
}

Status NcclSymbols::require_windows(const std::string& feature) const {
  if (window_register_ == nullptr) return missing(feature, "ncclCommWindowRegister", kNcclShrinkVersion);
  if (window_deregister_ == nullptr) return missing(feature, "ncclCommWindowDeregister", kNcclShrinkVersion);
  return Status::ok();
}

Status load_nccl(NcclSymbols* symbols) {
  int version = 0;
  Status s = nccl_status(ncclGetVersion(&version), "ncclGetVersion");
  if (!s.is_ok()) return s;
  // dlsym, not &ncclGetVersion: in an executable that address may be a PLT stub.
  const std::string library = library_of(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  s = check_nccl_version(version, NCCL_VERSION_CODE, library);
  if (!s.is_ok()) return s;
  *symbols = NcclSymbols::load(process_symbol_lookup(), version, library);
  return Status::ok();
}

}  // namespace chorus::detail::gpu
