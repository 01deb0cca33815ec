#!/usr/bin/env bash
# examples/tensorflow at 2 ranks, briefly (1 epoch on 1024 images): the
# custom loop under chorusrun --tcp and from torchrun's variables set by
# hand, the Keras fit under chorusrun over mpirun, torch and Keras side by
# side under chorusrun --tcp; each must print its test accuracy (the full runs and their 85 % are in docs/tensorflow.md).
#   run_examples.sh PYTHON CHORUSRUN SOURCE_DIR
set -euo pipefail
py="$1" chorusrun="$2" src="$3"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
cd "$src/examples/tensorflow"
export EXAMPLE_EPOCHS=1 EXAMPLE_TRAIN_SUBSET=1024 OMP_NUM_THREADS=1 TF_CPP_MIN_LOG_LEVEL=2
"$chorusrun" --tcp -np 2 "$py" tensorflow2_mnist.py | tee "$logs/tcp.log"
grep -q "test accuracy" "$logs/tcp.log"
"$chorusrun" -np 2 "$py" tensorflow2_keras_mnist.py | tee "$logs/mpi.log"
grep -q "test accuracy" "$logs/mpi.log"
"$chorusrun" --tcp -np 2 "$py" torch_and_keras.py | tee "$logs/two.log"
grep -q "test accuracy torch" "$logs/two.log"
port=$((20000 + RANDOM % 20000))
pids=()
for r in 1 0; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
    "$py" tensorflow2_mnist.py > "$logs/rank$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat "$logs"/rank*.log; exit 1; }; done
grep -q "test accuracy" "$logs/rank0.log" || { cat "$logs"/rank*.log; exit 1; }
echo "run_examples: the TensorFlow examples ran under chorusrun --tcp, chorusrun (mpirun) and torchrun's variables"
