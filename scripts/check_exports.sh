#!/usr/bin/env bash
# Fails when libchorus.so exports anything but its public API: the C ABI
# (each chorus_* symbol declared in c_api.h) and chorus:: classes and
# functions of the public headers, with their type information. Nothing of
# chorus::detail, nothing outside the chorus namespace; the only other
# symbols allowed are the standard library's instantiations over public
# types (e.g. std::vector<chorus::Status>'s), which the linker cannot tell
# from the API by name.
# usage: check_exports.sh LIBCHORUS_SO C_API_HEADER
set -euo pipefail
lib="$1" header="$2"
for tool in nm c++filt; do
  command -v "$tool" > /dev/null || { echo "check_exports: $tool not found (binutils)"; exit 1; }
done
[[ -f "$lib" ]] || { echo "check_exports: no library at $lib"; exit 1; }

symbols="$(nm -D --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }' | c++filt)"
bad=()
while IFS= read -r s; do
  [[ -z "$s" ]] && continue
  if [[ "$s" =~ (^|[^_])detail:: ]]; then
    bad+=("$s   (chorus::detail is private)")
  elif [[ "$s" =~ ^chorus_[a-z0-9_]+$ ]]; then
    grep -qE "\b$s\(" "$header" || bad+=("$s   (a C symbol that c_api.h does not declare)")
  elif [[ "$s" =~ ^(typeinfo\ for\ |typeinfo\ name\ for\ |vtable\ for\ )?chorus:: ]]; then
    :  # public API (the header's classes and functions)
  elif [[ "$s" =~ ^([A-Za-z_:<>,\*\&\ ]+\ )?std:: && "$s" == *"chorus::"* ]]; then
    :  # a standard template instantiated over a public type
  else
    bad+=("$s   (not part of the chorus API)")
  fi
done <<< "$symbols"

count="$(grep -c . <<< "$symbols" || true)"
if ((${#bad[@]} > 0)); then
  echo "check_exports: $lib exports ${#bad[@]} symbol(s) beyond the public API:"
  printf '  %s\n' "${bad[@]}"
  echo "Mark public API with CHORUS_API (chorus/export.h); keep the rest in chorus::detail or hidden."
  exit 1
fi
echo "check_exports: $lib exports $count symbols, all public API"
