#!/usr/bin/env bash
# Builds Chorus with sanitizers, each in its own build directory, and runs
# the tests where they find bugs (docs/testing.md says why these):
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
#         included; also float-cast-overflow, a double too large for the
#         integer it becomes, which GCC's "undefined" leaves out) on the
#         build without MPI (CHORUS_WITH_MPI=OFF: it also proves nothing
#         built needs MPI, no_mpi_dependency): the unit tests, the multi-rank
#         suites over the TCP transport (where every byte of a message is our
#         own code) at 3 ranks and as two hosts of two, the staged device
#         path, the C ABI, faults, strangers, the launcher and etcd.
#   tsan  ThreadSanitizer over the unit tests whose threads meet (in-process
#         ranks, engines, queues, shared memory, the staged worker, TCP).
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
  configure_and_build "$dir" address,undefined,float-cast-overflow -DCHORUS_WITH_MPI=OFF -DCHORUS_BUILD_BENCHMARKS=OFF
  # Whole allocation stacks (Open MPI has no frame pointers) so the
  # suppressions match by library; see lsan_openmpi.supp.
  export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
  export LSAN_OPTIONS="suppressions=$root/test/sanitizers/lsan_openmpi.supp"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # Not here, as they repeat what runs here through other doors: the suites
  # under chorusrun --tcp (chorusrun_tcp_npN: the same programs; chorusrun's
  # own code runs in chorusrun_tcp_flags and launcher_unit), at 2 and 4 plain
  # ranks (3, and 4 as hosts and as two hosts of two, stay), in network
  # namespaces (tcp_two_hosts_netns; the strangers' netns case stays),
  # elastic_local and elastic_netns (their unit cases and elastic_etcd run
  # here); the fuzz tests build their own ASan+UBSan binaries with clang in
  # the main suite.
  (cd "$dir" && ctest --output-on-failure --timeout 900 \
    -E '^(chorusrun_tcp_np[0-9]|tcp_np2|tcp_np4|tcp_two_hosts_netns|fuzz_.*|elastic_local|elastic_netns)$')
}

run_tsan() {
  local dir="${CHORUS_TSAN_BUILD_DIR:-$root/.build-tsan}"
  configure_and_build "$dir" thread -DCHORUS_WITH_MPI=OFF -DCHORUS_BUILD_LAUNCHER=OFF -DCHORUS_BUILD_BENCHMARKS=OFF \
    -- chorus_unit_tests chorus_race_canary
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
  # ThreadSanitizer's fixed memory layout can clash with high mmap
  # randomization (vm.mmap_rnd_bits > 28 on newer kernels): run without
  # ASLR where the container allows it.
  local no_aslr=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then no_aslr=(setarch "$(uname -m)" -R); fi
  (cd "$dir" && "${no_aslr[@]}" ctest --output-on-failure --timeout 900 -R '^sanitizer_race_canary$')
  # Every unit case but the [matrix] ones (world sizes 1..8 x counts: they
  # find chunking bugs, which ASan and the main suite catch; their smaller
  # siblings run every path here), eight ranks spinning on two cores being
  # most of TSan's time otherwise.
  "${no_aslr[@]}" "$dir/test/unit/chorus_unit_tests" '~[matrix]'
}

for part in "${parts[@]}"; do
  case "$part" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "run_sanitizers: unknown part '$part' (asan or tsan)" >&2; exit 2 ;;
  esac
  echo "run_sanitizers: $part passed"
done
