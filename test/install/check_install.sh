#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, builds the consumer project
# against it with find_package(Chorus), and runs it on 2 ranks.
# usage: check_install.sh BUILD_DIR SOURCE_DIR MPIEXEC [mpirun flags...]
set -euo pipefail
build="$1" src="$2" mpiexec="$3"
shift 3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
config="$(find "$work/prefix" -name ChorusConfig.cmake | head -1)"
[[ -n "$config" ]] || { echo "no ChorusConfig.cmake installed"; exit 1; }
libdir="$(dirname "$(find "$work/prefix" -name 'libchorus.so*' | head -1)")"
test -f "$work/prefix/include/chorus/chorus.h" || { echo "no public headers installed"; exit 1; }
if find "$work/prefix/include" -name '*.h' -exec grep -l '#include <mpi.h>\|#include "comm/' {} + | grep -q .; then
  echo "an installed public header includes a private or MPI header"; exit 1
fi
# The installed library exports the public API only.
"$src/scripts/check_exports.sh" "$(find "$work/prefix" -name 'libchorus.so.*.*' | head -1)" \
  "$work/prefix/include/chorus/c_api.h"
# The installed launcher runs from the prefix alone (its RPATH finds libchorus).
if [[ -x "$work/prefix/bin/chorusrun" ]]; then
  env -u LD_LIBRARY_PATH "$work/prefix/bin/chorusrun" --check-build > "$work/check_build.log" ||
    { echo "the installed chorusrun does not run:"; cat "$work/check_build.log"; exit 1; }
fi
cmake -S "$src/test/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$mpiexec" -np 2 "$@" -x LD_LIBRARY_PATH "$work/consumer/consumer"
