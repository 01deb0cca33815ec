#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the
# whole test suite (unit tests, every multi-rank test under mpirun at 2, 3
# and 4 ranks, the C ABI, the install-tree consumer). Extra arguments go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
cd "$build"
ctest --output-on-failure --timeout 900 "$@"
