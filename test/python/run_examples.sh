#!/usr/bin/env bash
# The Python examples at 2 ranks, quickly: the NumPy-only example, and the
# article's Horovod script (import chorus.torch as hvd) for one epoch on 256
# images, its checkpoint read by evaluate.py (the full run and its 85 % are in
# docs/python.md). The ResNet part needs torchvision and Debian's Fashion-MNIST.
#   run_examples.sh PYTHON CHORUSRUN SOURCE_DIR
set -euo pipefail
py="$1" chorusrun="$2" src="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$chorusrun" --tcp -np 2 "$py" "$src/examples/python/numpy_allreduce.py" | grep "all results right"
if ! "$py" -c "import torch, torchvision" 2> /dev/null || [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "run_examples: no torchvision or no Fashion-MNIST here; the training example is skipped"
  exit 0
fi
export EXAMPLE_EPOCHS=1 EXAMPLE_TRAIN_SUBSET=256 EXAMPLE_LOADER_WORKERS=0 EXAMPLE_OUT_DIR="$work" \
  EXAMPLE_DATA_DIR="$work/data" OMP_NUM_THREADS=1
"$chorusrun" --tcp -np 2 "$py" "$src/examples/python/horovod_training.py" | tee train.log
grep -q "epoch 0: loss" train.log
"$py" "$src/examples/python/evaluate.py" "$work/model_epoch_0.pth" --min-accuracy 0 | grep "test accuracy"
