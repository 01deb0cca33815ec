#!/usr/bin/env bash
# Builds Chorus with sanitizers, each in its own build directory, and runs
# the tests under them:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
#         included; also float-cast-overflow, a double too large for the
#         integer it becomes, which GCC's "undefined" leaves out) over the
#         core, the unit tests, the multi-rank MPI tests under mpirun at 2, 3
#         and 4 ranks, the C ABI and the launcher tests.
#         Open MPI's own allocations at init/finalize are suppressed by
#         library (test/sanitizers/lsan_openmpi.supp), nothing of ours.
#   tsan  ThreadSanitizer over the unit tests (in-process ranks, no MPI).
# A canary per sanitizer (test/sanitizers) proves each one reports a bug
# planted on purpose.
# Usage: scripts/run_sanitizers.sh [asan] [tsan]   (default: both)
# Any report fails the run (undefined behaviour and data races stop the
# program). Build directories: $CHORUS_ASAN_BUILD_DIR (.build-asan) and
# $CHORUS_TSAN_BUILD_DIR (.build-tsan); builds use ccache when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${CHORUS_BUILD_JOBS:-$(nproc)}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"  # as build.sh: a fresh clone reuses earlier builds
parts=("$@")
((${#parts[@]})) || parts=(asan tsan)

"$root/scripts/install_deps.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# configure_and_build DIR SANITIZERS CMAKE_ARGS... -- TARGETS...
configure_and_build() {
  local dir="$1" sanitize="$2"; shift 2
  local cmake_args=() targets=()
  while (($#)) && [[ "$1" != "--" ]]; do cmake_args+=("$1"); shift; done
  (($#)) && shift
  targets=("$@")
  # Debug: assertions on; the sanitizer module adds -O1 -g to every target.
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCHORUS_SANITIZE="$sanitize" \
        -DCHORUS_WITH_TORCH=OFF -DCHORUS_BUILD_EXAMPLES=OFF "${cmake_args[@]}"
  local target_args=()
  for t in "${targets[@]}"; do target_args+=(--target "$t"); done
  cmake --build "$dir" -j "$jobs" "${target_args[@]}"
}

run_asan() {
  local dir="${CHORUS_ASAN_BUILD_DIR:-$root/.build-asan}"
  configure_and_build "$dir" address,undefined,float-cast-overflow
  # Whole allocation stacks (Open MPI has no frame pointers) so the
  # suppressions match by library; see lsan_openmpi.supp.
  export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
  export LSAN_OPTIONS="suppressions=$root/test/sanitizers/lsan_openmpi.supp"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # Not here: install_consumer builds an uninstrumented program against the
  # sanitized library, the two-host launcher test only repeats
  # launcher_launch's code paths in network namespaces, and the fuzz tests
  # (fuzz_*) build their own ASan+UBSan binaries with clang in the main
  # suite already; elastic_local and elastic_netns repeat, process by
  # process, what the unit test's elastic cases and elastic_etcd run here.
  (cd "$dir" && ctest --output-on-failure --timeout 900 \
    -E '^(install_consumer|launcher_two_hosts_netns|fuzz_.*|elastic_local|elastic_netns)$')
}

run_tsan() {
  local dir="${CHORUS_TSAN_BUILD_DIR:-$root/.build-tsan}"
  configure_and_build "$dir" thread -DCHORUS_BUILD_LAUNCHER=OFF -- chorus_unit_tests chorus_race_canary
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
  # ThreadSanitizer's fixed memory layout can clash with high mmap
  # randomization (vm.mmap_rnd_bits > 28 on newer kernels): run without
  # ASLR where the container allows it.
  local no_aslr=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then no_aslr=(setarch "$(uname -m)" -R); fi
  (cd "$dir" && "${no_aslr[@]}" ctest --output-on-failure --timeout 900 -R '^(unit|sanitizer_race_canary)$')
}

for part in "${parts[@]}"; do
  case "$part" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "run_sanitizers: unknown part '$part' (asan or tsan)" >&2; exit 2 ;;
  esac
  echo "run_sanitizers: $part passed"
done
