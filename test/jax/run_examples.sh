#!/usr/bin/env bash
# examples/jax/fashion_mnist.py at 2 ranks, briefly (1 epoch on 2048
# images): under chorusrun, chorusrun --tcp and mpirun; each must print its
# test accuracy (the full run and its 85 % are in docs/jax.md).
#   run_examples.sh PYTHON CHORUSRUN SOURCE_DIR
set -euo pipefail
py="$1" chorusrun="$2" src="$3"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
cd "$src/examples/jax"
export EXAMPLE_EPOCHS=1 EXAMPLE_TRAIN_SUBSET=2048 EXAMPLE_MIN_ACCURACY=0 OMP_NUM_THREADS=1
"$chorusrun" -np 2 "$py" fashion_mnist.py | tee "$logs/chorusrun.log"
"$chorusrun" --tcp -np 2 "$py" fashion_mnist.py | tee "$logs/tcp.log"
mpirun --bind-to none -n 2 "$py" fashion_mnist.py | tee "$logs/mpirun.log"
for launcher in chorusrun tcp mpirun; do
  grep -q "test accuracy" "$logs/$launcher.log" || { echo "run_examples: no accuracy under $launcher"; exit 1; }
done
echo "run_examples: the JAX example ran under chorusrun, chorusrun --tcp and mpirun"
