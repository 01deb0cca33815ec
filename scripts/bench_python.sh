#!/usr/bin/env bash
# bench_python.sh: Chorus from Python against the same from C++, PyTorch DDP
# and (when installed) Horovod, side by side in one run, at 2 ranks:
#  1. call cost: a 4 KiB allreduce's latency and a storm of 200 x 16 KiB
#     allreduces, from C++ (collective_benchmark) and from Python
#     (benchmarks/python/call_cost.py), each after a Chorus barrier;
#  2. ResNet-18 training (batch 32 of 3x32x32 per rank, 1 thread per rank,
#     SGD): the C++ adapter (synthetic_benchmark), chorus.torch and
#     horovod.torch (benchmarks/python/hvd_synthetic_benchmark.py), DDP over
#     gloo (ddp_benchmark.py); R rounds alternating, means printed with the
#     ratio to DDP.
#
#   scripts/bench_python.sh [--rounds R] [--horovod-python PY] [--sections calls,resnet] [--smoke]
#
# --smoke: one round at a tiny size (seconds): that every job still runs
# and prints what the tables read, not a measurement (ctest
# benchmark_commands).
#
# Every job gets the same malloc tuning (chorusrun's, exported for all).
# --horovod-python: a python whose horovod.torch to compare (e.g. a venv's,
# see docs/python.md for how Horovod 0.28.1 installs here).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
py="${PYTHON:-/usr/bin/python3}"
rounds=2
hvd_py=""
sections="calls,resnet"
cpp_calls=() py_calls=() resnet=()  # --smoke shrinks them
while (($#)); do
  case $1 in
    --smoke) rounds=1 cpp_calls=(--latency-iters 50 --storm-rounds 2) py_calls=(--iters 50 --storm-rounds 2)
      resnet=(--batch-size 4 --num-warmup-batches 1 --num-batches-per-iter 1 --num-iters 1); shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --horovod-python) hvd_py=$2; shift 2 ;;
    --sections) sections=$2; shift 2 ;;
    *) echo "bench_python: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GLIBC_TUNABLES="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=268435456"
export PYTHONPATH="$root/python" CHORUS_LIBRARY="$build/core/libchorus.so"
chorusrun="$build/launcher/chorusrun"
mpi_flags=(--oversubscribe --bind-to none --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo)

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if [[ ,$sections, == *,calls,* ]]; then
  echo "## call cost, 2 ranks: $rounds rounds, C++ and Python alternating"
  declare -A calls
  for ((round = 1; round <= rounds; round++)); do
    cpp=$("$chorusrun" -np 2 "$build/benchmarks/collective_benchmark" --sections latency,storm --latency-barrier chorus \
      --storm-tensors 200 --storm-bytes 16384 "${cpp_calls[@]}")
    python=$("$chorusrun" -np 2 "$py" "$root/benchmarks/python/call_cost.py" "${py_calls[@]}")
    calls[cpp_latency]+="$(sed -n 's/^chorus (enqueue..wait.*median *\([0-9.]*\) us.*/\1/p' <<< "$cpp") "
    calls[cpp_storm]+="$(sed -n 's/^chorus, async + fused *\([0-9.]*\) ms.*/\1/p' <<< "$cpp") "
    calls[numpy_latency]+="$(sed -n 's/^chorus (NumPy) 4 KiB.*median *\([0-9.]*\) us.*/\1/p' <<< "$python") "
    calls[numpy_storm]+="$(sed -n 's/^chorus (NumPy) storm.*median *\([0-9.]*\) ms.*/\1/p' <<< "$python") "
    calls[torch_latency]+="$(sed -n 's/^chorus.torch 4 KiB.*median *\([0-9.]*\) us.*/\1/p' <<< "$python") "
    calls[torch_storm]+="$(sed -n 's/^chorus.torch storm.*median *\([0-9.]*\) ms.*/\1/p' <<< "$python") "
    echo "round $round done"
  done
  for k in cpp_latency cpp_storm numpy_latency numpy_storm torch_latency torch_storm; do
    calls[$k]=$(tr ' ' '\n' <<< "${calls[$k]}" | grep . | median)
  done
  printf "%-36s %10s %12s\n" "median of $rounds rounds" "4 KiB (us)" "storm (ms)"
  printf "%-36s %10.1f %12.3f\n" "C++ (collective_benchmark)" "${calls[cpp_latency]}" "${calls[cpp_storm]}"
  for f in numpy torch; do
    awk -v n="$f" -v l="${calls[${f}_latency]}" -v s="${calls[${f}_storm]}" -v cl="${calls[cpp_latency]}" \
      -v cs="${calls[cpp_storm]}" 'BEGIN { printf "%-36s %10.1f %12.3f   (+%.1f us, %.2fx the C++ storm)\n",
      "Python, " n, l, s, l - cl, s / cs }'
  done
fi

[[ ,$sections, == *,resnet,* ]] || exit 0
result() { sed -n 's/^RESULT np=[0-9]* imgs_per_sec_total=\([0-9.]*\) .*/\1/p' | tail -n1; }
declare -A sum
jobs=(cpp chorus ddp)
[[ -n $hvd_py ]] && jobs+=(horovod)
for ((round = 1; round <= rounds; round++)); do
  for job in "${jobs[@]}"; do
    case $job in
      cpp) out=$("$chorusrun" -np 2 "$build/benchmarks/synthetic_benchmark" "${resnet[@]}") ;;
      chorus) out=$("$chorusrun" -np 2 "$py" "$root/benchmarks/python/hvd_synthetic_benchmark.py" --framework chorus \
                      "${resnet[@]}") ;;
      ddp) out=$("$py" -m torch.distributed.run --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
                   "$root/benchmarks/synthetic_benchmark/ddp_benchmark.py" "${resnet[@]}" | sed 's/^\[default0\]://') ;;
      horovod) out=$(mpirun -np 2 "${mpi_flags[@]}" -x GLIBC_TUNABLES "$hvd_py" \
                       "$root/benchmarks/python/hvd_synthetic_benchmark.py" --framework horovod "${resnet[@]}") ;;
    esac
    value=$(result <<< "$out")
    [[ -n $value ]] || { echo "bench_python: $job printed no RESULT line:"; echo "$out"; exit 1; }
    echo "round $round: $job $value images/s"
    sum[$job]=$(awk -v a="${sum[$job]:-0}" -v b="$value" 'BEGIN { print a + b }')
  done
done
echo "## ResNet-18, 2 ranks, batch 32 per rank, mean of $rounds rounds (images/s, ratio to DDP)"
ddp=$(awk -v s="${sum[ddp]}" -v r="$rounds" 'BEGIN { print s / r }')
for job in "${jobs[@]}"; do
  awk -v j="$job" -v s="${sum[$job]}" -v r="$rounds" -v d="$ddp" \
    'BEGIN { printf "%-8s %8.1f images/s   %.2fx DDP\n", j, s / r, s / r / d }'
done
