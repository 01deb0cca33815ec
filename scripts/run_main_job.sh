#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the
# main job on 2 ranks. Until the Fashion-MNIST training example lands, the
# main job is the 2-rank allreduce demo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
exec "$build/launcher/chorusrun" -np 2 "$build/examples/allreduce_demo" "$@"
