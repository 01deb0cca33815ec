#pragma once
// The NCCL we run against. Chorus links libnccl.so.2 dynamically and calls
// what every NCCL since kMinNcclVersion has directly; symbols added later
// (2.27: ncclCommShrink, ncclCommWindowRegister/Deregister) are looked up at
// run time, so one build runs on an older NCCL and says clearly what is
// missing when a feature needs them.

#include <functional>
#include <string>

#include <nccl.h>

#include "chorus/status.h"

namespace chorus::detail::gpu {

/// The oldest NCCL the GPU data plane runs on: ncclCommSplit (2.18),
/// ncclCommInitRankConfig (2.14), ncclRedOpCreatePreMulSum (2.11).
constexpr int kMinNcclVersion = 21800;
/// The first NCCL with ncclCommShrink and window registration.
constexpr int kNcclShrinkVersion = 22700;

/// NCCL_VERSION_CODE -> "2.28.9" (codes before 2.9 used major*1000).
std::string nccl_version_text(int code);
/// OK when `runtime_code` is at least kMinNcclVersion and has the major
/// version Chorus was compiled against (`header_code`); otherwise a
/// precondition error naming both versions and `library` (the file loaded).
Status check_nccl_version(int runtime_code, int header_code, const std::string& library);

/// Finds a symbol by name; returns null when absent.
using SymbolLookup = std::function<void*(const char* name)>;
/// dlsym in everything the process has loaded (libnccl.so.2 is linked in).
SymbolLookup process_symbol_lookup();
/// dlopen(path) and dlsym in it; on failure null and `*error` says why.
SymbolLookup library_symbol_lookup(const std::string& path, std::string* error);
/// The file a symbol of the process comes from ("libnccl.so.2 at /usr/lib/...").
std::string library_of(const void* symbol);

/// The run-time-resolved part of the NCCL API.
class NcclSymbols {
 public:
  using ShrinkFn = ncclResult_t (*)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
  using WindowRegisterFn = ncclResult_t (*)(ncclComm_t, void*, size_t, ncclWindow_t*, int);
  using WindowDeregisterFn = ncclResult_t (*)(ncclComm_t, ncclWindow_t);

  /// Looks every optional symbol up. `version_code` and `library` only go
  /// into the messages of the require_* calls.
  static NcclSymbols load(const SymbolLookup& lookup, int version_code, std::string library);

  ShrinkFn shrink() const { return shrink_; }
  WindowRegisterFn window_register() const { return window_register_; }
  WindowDeregisterFn window_deregister() const { return window_deregister_; }

  /// OK when ncclCommShrink is there; otherwise a precondition error naming
  /// `feature`, the symbol, the loaded version and library, and the version needed.
  Status require_shrink(const std::string& feature) const;
  /// The same for ncclCommWindowRegister and ncclCommWindowDeregister.
  Status require_windows(const std::string& feature) const;

 private:
  Status missing(const std::string& feature, const char* symbol, int needed) const;

  ShrinkFn shrink_ = nullptr;
  WindowRegisterFn window_register_ = nullptr;
  WindowDeregisterFn window_deregister_ = nullptr;
  int version_code_ = 0;
  std::string library_;
};

/// ncclGetVersion of the linked NCCL, checked with check_nccl_version, and
/// its optional symbols. The one entry point the data plane will call.
Status load_nccl(NcclSymbols* symbols);

}  // namespace chorus::detail::gpu
