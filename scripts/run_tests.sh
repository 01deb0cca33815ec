#!/usr/bin/env bash
# The README's test command (CI's too): installs what is missing, builds,
# and runs the whole test suite in steps, each within its share of CI's 90
# minutes (scripts/ci_steps.sh: an overrun stops the run naming the step;
# every step's minutes are printed at the end):
#   deps, format   the Debian packages and the frameworks from PyPI (TensorFlow,
#                  into .venv); the changed lines' formatting
#   build          the main build (MPI, LibTorch, CUDA where found) into build/
#   python         the Python package into .venv (ships that build's library)
#   main suite     every test of the main build: unit, every multi-rank case
#                  under mpirun, chorusrun and over TCP at 2, 3 and 4 ranks,
#                  Python, TensorFlow, LibTorch, elastic, launcher, fuzzers, install tree
#   asan           ASan+UBSan on the build without MPI (CHORUS_WITH_MPI=OFF,
#                  so also the proof that nothing needs MPI): scripts/run_sanitizers.sh
#   tsan           TSan over the unit tests that run threads against each other
# Extra arguments go to ctest and run that subset of the main suite only;
# CHORUS_SANITIZERS=0 skips the sanitizer steps always.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
source "$root/scripts/ci_steps.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Shares, in minutes, on 2 cores: each about 1.5x what the step takes from an
# empty ccache on the slowest machine of this kind seen (docs/testing.md).
ci_step deps 25 bash -c '"$1/scripts/install_deps.sh" && "$1/scripts/install_test_frameworks.sh"' _ "$root"
ci_step format 2 "$root/scripts/check_format.sh"
ci_step build 20 "$root/scripts/build.sh"
ci_step python 4 "$root/scripts/install_python_package.sh"
ci_step "main suite" 32 bash -c 'cd "$1" && shift && exec ctest --output-on-failure --timeout 900 "$@"' \
  _ "$build" "$@"
if (($# == 0)) && [[ "${CHORUS_SANITIZERS:-1}" != 0 ]]; then
  ci_step asan 22 "$root/scripts/run_sanitizers.sh" asan
  ci_step tsan 12 "$root/scripts/run_sanitizers.sh" tsan
fi
