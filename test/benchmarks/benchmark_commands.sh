#!/usr/bin/env bash
# Every benchmark command docs/performance.md gives, run as the docs give it
# but at a tiny size (seconds): that each still runs and prints the lines
# its tables are read from, so that a benchmark moved or renamed fails here
# rather than in a reader's hands. Not a measurement: no time is checked.
#   benchmark_commands.sh SOURCE_DIR BUILD_DIR NAME     (ctest benchmark_<NAME>)
# Exit 77 (skipped) where what NAME needs is missing, saying what.
set -euo pipefail
root=$1 build=$2 name=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$build"  # the docs' commands run from build/

# run CMD...: CMD's output into $out/o, bounded (a hang fails with what it
# printed, inside ctest's own timeout); a failure shows the output.
run() {
  local rc=0
  timeout -k 10 240 "$@" > "$out/o" 2>&1 || rc=$?
  ((rc == 0)) && return 0
  cat "$out/o"
  echo "benchmark_commands $name: exit $rc$( ((rc == 124)) && echo ' (past 240 s)') from: $*" >&2
  exit 1
}

# expect FILE PATTERN: the output has a line the docs' tables read.
expect() {
  grep -qE "$2" "$1" && return 0
  cat "$1"
  echo "benchmark_commands $name: no line matching '$2' in the output above" >&2
  exit 1
}
skip() { echo "benchmark_commands $name: skipped: $*"; exit 77; }
tiny_resnet=(--batch-size 4 --num-warmup-batches 1 --num-batches-per-iter 1 --num-iters 1)

case $name in
  collective)  # BENCH --sections sweep,latency (and the storm)
    run ./launcher/chorusrun -np 2 benchmarks/collective_benchmark --sections sweep,latency,storm --max-bytes 65536 \
      --iters 3 --latency-iters 50 --storm-rounds 2
    expect "$out/o" 'MPI_Allreduce'
    expect "$out/o" '^chorus \(enqueue..wait'
    expect "$out/o" '^chorus, async \+ fused' ;;
  collective_np3)  # ./launcher/chorusrun -np N benchmarks/collective_benchmark --sections storm
    run ./launcher/chorusrun -np 3 benchmarks/collective_benchmark --sections storm --storm-rounds 2
    expect "$out/o" '^chorus, async \+ fused' ;;
  synthetic)  # ./launcher/chorusrun -np 2 benchmarks/synthetic_benchmark --num-iters 6
    [[ -x benchmarks/synthetic_benchmark ]] || skip "no LibTorch build (benchmarks/synthetic_benchmark)"
    run ./launcher/chorusrun -np 2 benchmarks/synthetic_benchmark "${tiny_resnet[@]}"
    expect "$out/o" '^RESULT np=2 imgs_per_sec_total=' ;;
  bench_python)  # scripts/bench_python.sh [--rounds R]
    [[ -x benchmarks/synthetic_benchmark ]] || skip "no LibTorch build (benchmarks/synthetic_benchmark)"
    run env CHORUS_BUILD_DIR="$build" bash "$root/scripts/bench_python.sh" --smoke
    expect "$out/o" '^Python, torch +[0-9.]+ +[0-9.]+'
    expect "$out/o" '^chorus +[0-9.]+ images/s +[0-9.]+x DDP' ;;
  compare_ddp)  # scripts/compare_ddp.sh ARGS
    [[ -x benchmarks/synthetic_benchmark ]] || skip "no LibTorch build (benchmarks/synthetic_benchmark)"
    run bash "$root/scripts/compare_ddp.sh" --build "$build" --rounds 1 --job-timeout 100 -- "${tiny_resnet[@]}"
    expect "$out/o" '^Chorus/DDP +[0-9.]+' ;;
  autotune)  # bash scripts/measure_autotune.sh --build build --sample-ms 1000 --iters 40
    [[ -x benchmarks/synthetic_benchmark ]] || skip "no LibTorch build (benchmarks/synthetic_benchmark)"
    run bash "$root/scripts/measure_autotune.sh" --build "$build" --sample-ms 20 --iters 2
    expect "$out/o" '^Fashion-MNIST, images/s .*defaults [0-9.]+, autotune [0-9.]+' ;;
  bench_tcp)  # sudo scripts/bench_tcp.sh --sections ... (local: no namespaces needed)
    [[ $(id -u) -eq 0 ]] || skip "bench_tcp.sh needs root"
    run bash "$root/scripts/bench_tcp.sh" --build "$build" --sections local --local-rounds 1
    expect "$out/o" 'PASS|MISS' ;;
  timeline_phases)  # scripts/timeline_phases.py on a timeline of the sweep
    CHORUS_TIMELINE="$out/timeline.json" ./launcher/chorusrun -np 2 benchmarks/collective_benchmark --sections sweep \
      --min-bytes 1048576 --max-bytes 1048576 --iters 20 > "$out/bench" 2>&1
    run python3 "$root/scripts/timeline_phases.py" "$out/timeline.json"
    expect "$out/o" '[0-9]' ;;
  plot)  # scripts/plot_benchmarks.py busbw OUTPUT
    /usr/bin/python3 -c 'import matplotlib' 2> /dev/null || skip "no matplotlib (python3-matplotlib draws the plots)"
    ./launcher/chorusrun -np 2 benchmarks/collective_benchmark --sections sweep --max-bytes 65536 --iters 3 \
      > "$out/sweep.txt" 2>&1
    /usr/bin/python3 "$root/scripts/plot_benchmarks.py" busbw "$out/sweep.txt" -o "$out/busbw.png"
    [[ -s "$out/busbw.png" ]] || { echo "benchmark_commands plot: no PNG drawn" >&2; exit 1; } ;;
  elastic_recovery)  # bash benchmarks/elastic/elastic_recovery.sh build 3 (from the repository root)
    run bash -c 'cd "$1" && bash benchmarks/elastic/elastic_recovery.sh "$2" 1' _ "$root" "$build"
    expect "$out/o" 'COMMIT resnet18 .*commit_ms=' ;;
  ray_elastic)  # .venv/bin/python benchmarks/ray_elastic_recovery.py --repeats 3
    py="$root/.venv/bin/python"
    [[ -x $py ]] && "$py" -c 'import ray' 2> /dev/null || skip "no .venv with Ray (scripts/install_test_frameworks.sh)"
    run env PYTHONPATH="$root/python" CHORUS_LIBRARY="$build/core/libchorus.so" \
      "$py" "$root/benchmarks/ray_elastic_recovery.py" --repeats 1
    expect "$out/o" '[0-9]+\.[0-9]+' ;;
  *) echo "benchmark_commands: unknown NAME '$name'" >&2; exit 2 ;;
esac
echo "benchmark_commands $name: runs"
