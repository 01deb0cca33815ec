#!/usr/bin/env bash
# Runs COMMAND on NP ranks under torchrun (python -m torch.distributed.run),
# as a DDP user starts a job; skipped (exit 0, saying so) without torch.
#   run_torchrun.sh PYTHON NP COMMAND...
set -euo pipefail
py="$1" np="$2"
shift 2
if ! "$py" -c "import torch.distributed.run" 2> /dev/null; then
  echo "run_torchrun: $py has no torch.distributed.run; skipped"
  exit 0
fi
# torch 1.13 on Python 3.11 reads only 1 or 2 in --redirects/--tee (0, its
# default, and 3 fail: Python 3.11 no longer lists a flag enum's zero and
# combined members); 1 tees stdout and leaves stderr alone. The underscore
# spelling of --nproc_per_node works with every torch version.
exec "$py" -m torch.distributed.run --standalone --nproc_per_node "$np" --redirects 1 --tee 1 \
  --no_python "$@"
