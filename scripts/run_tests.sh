#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the
# whole test suite (unit tests, every multi-rank test under mpirun and over
# TCP at 2, 3 and 4 ranks, the C ABI, the install-tree consumer), then the
# same with CHORUS_WITH_MPI=OFF (scripts/run_tests_without_mpi.sh, its own
# build directory), then the sanitizer runs (scripts/run_sanitizers.sh:
# ASan+UBSan and TSan, in their own build directories). Extra arguments go to
# ctest and run that subset only, without the other two; CHORUS_SANITIZERS=0
# skips the sanitizer runs always.
set -euo pipefail
# Before the build, as it takes seconds: the changed lines' formatting (install_deps.sh brings clang-format).
"$(dirname "${BASH_SOURCE[0]}")/install_deps.sh" && "$(dirname "${BASH_SOURCE[0]}")/check_format.sh"
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
(cd "$build" && ctest --output-on-failure --timeout 900 "$@")
if (($# == 0)); then
  # The same suite with CHORUS_WITH_MPI=OFF, over TCP; the elastic jobs run
  # over TCP in the main suite already, the same code (CI stays under 60 min).
  "$root/scripts/run_tests_without_mpi.sh" -E '^(python_elastic_example|elastic_local|elastic_netns|elastic_etcd)$'
fi
if (($# == 0)) && [[ "${CHORUS_SANITIZERS:-1}" != 0 ]]; then
  "$root/scripts/run_sanitizers.sh"
fi
