#!/usr/bin/env bash
# Chorus against TensorFlow's MultiWorkerMirroredStrategy, same model, batch
# and TensorFlow, both at NP ranks on this host, in one run
# (benchmarks/tensorflow_vs_mwms.py), then the ratio; and the ceiling: the
# same processes each training alone with no collective. Needs a Python with
# TensorFlow and chorus (.venv after the README's test command).
#   scripts/bench_tensorflow.sh [NP] [extra args for the benchmark]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
np="${1:-2}"
shift || true
py="${CHORUS_TF_PYTHON:-$root/.venv/bin/python}"
chorusrun="${CHORUSRUN:-$root/build/launcher/chorusrun}"
bench="$root/benchmarks/tensorflow_vs_mwms.py"
export OMP_NUM_THREADS=1 TF_CPP_MIN_LOG_LEVEL=2 PYTHONPATH="${PYTHONPATH:-$root/python}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$chorusrun" -np "$np" "$py" "$bench" --mode chorus "$@" | tee "$out/chorus"
base=$((21000 + RANDOM % 20000))
workers=""
for ((i = 0; i < np; i++)); do workers+="${workers:+,}\"localhost:$((base + i))\""; done
pids=()
for ((i = 0; i < np; i++)); do
  TF_CONFIG="{\"cluster\": {\"worker\": [$workers]}, \"task\": {\"type\": \"worker\", \"index\": $i}}" \
    "$py" "$bench" --mode mwms "$@" > "$out/mwms.$i" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat "$out"/mwms.*; exit 1; }; done
grep "images/s" "$out/mwms.0"
chorus_rate="$(grep -o '[0-9.]* images/s' "$out/chorus" | cut -d' ' -f1)"
mwms_rate="$(grep -o '[0-9.]* images/s' "$out/mwms.0" | cut -d' ' -f1)"
python3 -c "print(f'chorus / MultiWorkerMirroredStrategy: {$chorus_rate / $mwms_rate:.2f}x')"
# The ceiling: the same processes each training alone, no collective at all.
"$chorusrun" -np "$np" "$py" "$bench" --mode alone "$@" | tee "$out/alone"
alone_rate="$(grep -o '[0-9.]* images/s' "$out/alone" | cut -d' ' -f1)"
python3 -c "print(f'no communication at all / MultiWorkerMirroredStrategy: {$alone_rate / $mwms_rate:.2f}x "\
"(the most any method could gain here); chorus / that: {$chorus_rate / $alone_rate:.2f}')"
