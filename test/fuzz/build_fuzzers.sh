#!/usr/bin/env bash
# Configures and builds the fuzz targets with a fuzzing compiler, apart from
# the main build: CXX SOURCE_DIR BUILD_DIR. Incremental on later runs.
set -euo pipefail
cxx=$1 source_dir=$2 build_dir=$3
cmake -S "$source_dir/test/fuzz" -B "$build_dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCHORUS_SOURCE_DIR="$source_dir" > "$build_dir.configure.log" 2>&1 ||
  { cat "$build_dir.configure.log" >&2; exit 1; }
cmake --build "$build_dir" -j2
