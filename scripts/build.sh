#!/usr/bin/env bash
# Configures and builds Chorus into ./build (or $CHORUS_BUILD_DIR) with ccache.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
jobs="${CHORUS_BUILD_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${CHORUS_BUILD_TYPE:-Release}" "$@"
cmake --build "$build" -j "$jobs"
