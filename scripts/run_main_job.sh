#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the
# main job on 2 ranks: a small CNN trained data-parallel on Fashion-MNIST
# (examples/train_fashion_mnist), 3 epochs, 1 compute thread per rank,
# failing unless the test accuracy reaches 85%. Extra arguments go to the
# training program (e.g. --epochs 1, --checkpoint /tmp/fashion.pt, --help).
set -euo pipefail
# Only what the job needs (the launcher and the example): the test suite's
# binaries are built by run_tests.sh, not here.
export CHORUS_BUILD_TARGETS="chorusrun train_fashion_mnist"
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
program="$build/examples/train_fashion_mnist"
if [[ ! -x $program ]]; then
  echo "run_main_job: $program was not built: it needs LibTorch (libtorch-dev, see scripts/install_deps.sh)" >&2
  exit 1
fi
exec "$build/launcher/chorusrun" -np 2 "$program" --epochs 3 --batch-size 64 --threads 1 --min-accuracy 0.85 "$@"
