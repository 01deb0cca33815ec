#!/usr/bin/env bash
# The library built without MPI (CHORUS_WITH_MPI=OFF) in its own build
# directory: configures, builds and runs its tests, which start every
# multi-rank job over TCP (test/tcp) and check that nothing built links MPI
# (no_mpi_dependency). Extra arguments go to ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CHORUS_BUILD_DIR="${CHORUS_NOMPI_BUILD_DIR:-$root/build-nompi}"
"$root/scripts/build.sh" -DCHORUS_WITH_MPI=OFF -DCHORUS_WITH_TORCH=OFF
(cd "$CHORUS_BUILD_DIR" && ctest --output-on-failure --timeout 900 "$@")
