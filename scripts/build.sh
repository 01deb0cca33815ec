#!/usr/bin/env bash
# Configures and builds Chorus into ./build (or $CHORUS_BUILD_DIR) with ccache:
# everything, or only $CHORUS_BUILD_TARGETS.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
jobs="${CHORUS_BUILD_JOBS:-$(nproc)}"
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# (CI) reuses what any earlier build of the same sources compiled.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${CHORUS_BUILD_TYPE:-Release}" "$@"
# CHORUS_BUILD_TARGETS (space-separated) builds only those, e.g. what the
# main job needs, so its first line appears before the tests are compiled.
targets=()
for t in ${CHORUS_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
