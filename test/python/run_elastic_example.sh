#!/usr/bin/env bash
# An elastic Fashion-MNIST example (examples/python/elastic_training.py,
# examples/tensorflow/tensorflow2_keras_elastic.py) on three "hosts" (names
# of this machine), one worker killed with SIGKILL in the middle of epoch 2:
# the two others must go on from their last commit and reach 85 % test
# accuracy after 3 epochs (the script exits 1 below it).
#   run_elastic_example.sh PYTHON CHORUSRUN SCRIPT MODULES
# MODULES: what the example imports ("torch, torchvision"); without them
# here, or without Fashion-MNIST, the test is skipped (exit 77).
set -uo pipefail
py="$1" chorusrun="$2" script="$3" modules="$4"
if ! "$py" -c "import $modules" 2> /dev/null || [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "run_elastic_example: no $modules or no Fashion-MNIST here: skipped"
  exit 77
fi
work="$(mktemp -d)"
trap 'pkill -9 -f "^$py $script" 2>/dev/null; rm -rf "$work"' EXIT
printf '#!/bin/sh\necho 127.0.0.1:1\necho 127.0.0.2:1\necho 127.0.0.3:1\n' > "$work/hosts.sh"
chmod +x "$work/hosts.sh"
export PYTHONPATH="$(dirname "$script"):${PYTHONPATH:-}" EXAMPLE_DATA_DIR="$work/data" OMP_NUM_THREADS=1
"$chorusrun" --min-np 2 --max-np 3 --host-discovery-script "$work/hosts.sh" "$py" "$script" > "$work/out" 2>&1 &
job=$!
for _ in $(seq 1200); do  # epoch 2 under way (10 minutes at most)
  grep -q "epoch 2 batch 100 " "$work/out" && break
  sleep 0.5
done
victim="$(pgrep -f "^$py $script" | sort -n | sed -n 2p)"
[[ -n "$victim" ]] || { cat "$work/out"; echo "FAIL: no second worker to kill"; exit 1; }
kill -9 "$victim"
echo "killed worker pid $victim in epoch 2"
wait "$job"
code=$?
grep -v " batch " "$work/out"
[[ $code -eq 0 ]] || { echo "FAIL: the job exited $code"; exit 1; }
grep -q "reset: 2 ranks" "$work/out" || { echo "FAIL: no reset to 2 ranks"; exit 1; }
grep -q "test accuracy: .* on 2 ranks" "$work/out" || { echo "FAIL: no accuracy line"; exit 1; }
echo "run_elastic_example: passed"
