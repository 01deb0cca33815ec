// The NCCL loader: version checks and the messages when a newer symbol is
// missing (host only: ncclGetVersion and dlsym need no GPU).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "device/cuda/nccl_symbols.h"

using namespace chorus::detail::gpu;

namespace {
int fake_symbol = 0;
}  // namespace

TEST_CASE("NCCL version codes read as text in both numbering schemes", "[host][nccl]") {
  CHECK(nccl_version_text(22809) == "2.28.9");
  CHECK(nccl_version_text(21800) == "2.18.0");
  CHECK(nccl_version_text(2803) == "2.8.3");
}

TEST_CASE("Too old or another major NCCL is refused, naming the library", "[host][nccl]") {
  CHECK(check_nccl_version(22809, 22809, "/x/libnccl.so.2").is_ok());
  CHECK(check_nccl_version(22000, 22809, "/x/libnccl.so.2").is_ok());
  chorus::Status old = check_nccl_version(21703, 22809, "/x/libnccl.so.2");
  CHECK_FALSE(old.is_ok());
  CHECK(old.message() ==
        "NCCL 2.17.3 (/x/libnccl.so.2) is too old: the GPU data plane needs NCCL 2.18.0 or newer; "
        "point LD_LIBRARY_PATH at a newer libnccl.so.2");
  chorus::Status major = check_nccl_version(30001, 22809, "/y/libnccl.so.3");
  CHECK_FALSE(major.is_ok());
  CHECK(major.message().find("NCCL 3.0.1 (/y/libnccl.so.3) has another major version than the NCCL 2.28.9") == 0);
}

TEST_CASE("A missing 2.27 symbol is reported with the feature, symbol and versions", "[host][nccl]") {
  std::map<std::string, void*> present{{"ncclCommWindowRegister", &fake_symbol}};
  SymbolLookup lookup = [&](const char* name) {
    auto it = present.find(name);
    return it == present.end() ? nullptr : it->second;
  };
  NcclSymbols s = NcclSymbols::load(lookup, 22605, "/old/libnccl.so.2");
  CHECK(s.shrink() == nullptr);
  chorus::Status shrink = s.require_shrink("removing a failed rank");
  CHECK_FALSE(shrink.is_ok());
  CHECK(shrink.message() ==
        "removing a failed rank needs ncclCommShrink (NCCL 2.27.0 or newer), which the loaded NCCL 2.26.5 "
        "(/old/libnccl.so.2) does not have");
  chorus::Status windows = s.require_windows("symmetric buffers");
  CHECK(windows.message().find("symmetric buffers needs ncclCommWindowDeregister") == 0);
  present["ncclCommWindowDeregister"] = &fake_symbol;
  present["ncclCommShrink"] = &fake_symbol;
  NcclSymbols all = NcclSymbols::load(lookup, 22809, "/new/libnccl.so.2");
  CHECK(all.require_shrink("x").is_ok());
  CHECK(all.require_windows("x").is_ok());
}

TEST_CASE("Looking symbols up in a library that is not NCCL finds none", "[host][nccl]") {
  std::string error;
  CHECK_FALSE(library_symbol_lookup("/nonexistent/libnccl.so.2", &error));
  CHECK(error.find("cannot load /nonexistent/libnccl.so.2: ") == 0);
  SymbolLookup libc = library_symbol_lookup("libc.so.6", &error);
  REQUIRE(libc);
  CHECK(libc("malloc") != nullptr);
  NcclSymbols s = NcclSymbols::load(libc, 22809, "libc.so.6");
  CHECK_FALSE(s.require_shrink("shrink").is_ok());
}

TEST_CASE("The NCCL this build links loads and has what its version promises", "[host][nccl]") {
  NcclSymbols s;
  chorus::Status loaded = load_nccl(&s);
  REQUIRE(loaded.is_ok());
  int version = 0;
  REQUIRE(ncclGetVersion(&version) == ncclSuccess);
  INFO("NCCL " << nccl_version_text(version));
  CHECK(version >= kMinNcclVersion);
  CHECK(s.require_shrink("x").is_ok() == (version >= kNcclShrinkVersion));
  CHECK(s.require_windows("x").is_ok() == (version >= kNcclShrinkVersion));
  if (s.shrink() != nullptr) CHECK(library_of(reinterpret_cast<void*>(s.shrink())).find("nccl") != std::string::npos);
}
