#!/usr/bin/env bash
# chorus.jax against JAX's own gloo CPU collectives and (where it imports)
# mpi4jax: a float32 allreduce inside jax.jit at 2 ranks, 4 KiB to 64 MiB,
# all in one run (benchmarks/jax_vs_gloo.py), then the ratios per size; the
# per-call costs (benchmarks/jax_call_cost.py); and the example's train step
# against the same step over gloo (benchmarks/jax_train_step.py). PYTHON: a Python with
# jax and chorus (.venv's after the README's test command; one with mpi4jax
# as well for its column).
#   scripts/bench_jax.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-$root/.venv/bin/python}"
build="${CHORUS_BUILD_DIR:-$root/build}"
chorusrun="$build/launcher/chorusrun"
bench="$root/benchmarks/jax_vs_gloo.py"
export OMP_NUM_THREADS=1 PYTHONPATH="${PYTHONPATH:-$root/python}" CHORUS_LIBRARY="$build/core/libchorus.so"
export CHORUS_JAX_LIBRARY="$build/frameworks/jax/libchorus_jax.so" OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$chorusrun" -np 2 "$py" "$bench" --mode chorus | tee "$out/chorus"
port=$((21000 + RANDOM % 20000))
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$py" "$bench" --mode gloo > "$out/gloo.$r" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat "$out"/gloo.*; exit 1; }; done
grep -v "^\[" "$out/gloo.0" | grep "bytes\|#" | tee "$out/gloo"
if "$py" -c "import mpi4jax" 2> /dev/null; then
  mpirun --oversubscribe --bind-to none -n 2 "$py" "$bench" --mode mpi4jax | tee "$out/mpi4jax"
else
  echo "# mpi4jax: does not import in $py (not compared)"
  : > "$out/mpi4jax"
fi
python3 - "$out" <<'PY'
import re, sys
def rows(name):
    found = {}
    for line in open(f"{sys.argv[1]}/{name}"):
        m = re.match(r"(\d+) bytes: ([0-9.]+) us, ([0-9.]+) GB/s", line)
        if m:
            found[int(m[1])] = (float(m[2]), float(m[3]))
    return found
chorus, gloo, m4j = rows("chorus"), rows("gloo"), rows("mpi4jax")
print("bytes        chorus us (GB/s)     gloo us (GB/s)  chorus/gloo bus bw   mpi4jax us  chorus us - mpi4jax us")
for n in sorted(chorus):
    c, g = chorus[n], gloo.get(n, (float("nan"),) * 2)
    m = m4j.get(n, (float("nan"), 0))[0]
    print(f"{n:>9} {c[0]:>10.1f} ({c[1]:.3f}) {g[0]:>10.1f} ({g[1]:.3f}) {c[1] / g[1]:>12.2f}x {m:>14.1f} {c[0] - m:>12.1f}")
PY
"$chorusrun" -np 2 "$py" "$root/benchmarks/jax_call_cost.py"

# The example's train step, images/s: chorus.jax against lax.pmean over gloo.
step="$root/benchmarks/jax_train_step.py"
"$chorusrun" -np 2 "$py" "$step" --mode chorus | tee "$out/step"
port=$((21000 + RANDOM % 20000))
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$py" "$step" --mode gloo > "$out/step.$r" 2>&1 &
  pids[r]=$!
done
for p in "${pids[@]}"; do wait "$p" || { cat "$out"/step.*; exit 1; }; done
grep "RESULT\|#" "$out/step.0"
python3 -c "import re,sys; c=float(re.search(r'RESULT chorus ([0-9.]+)', open(sys.argv[1]).read())[1]); \
g=float(re.search(r'RESULT gloo ([0-9.]+)', open(sys.argv[2]).read())[1]); print(f'train step: chorus / gloo {c / g:.2f}x')" \
  "$out/step" "$out/step.0"
