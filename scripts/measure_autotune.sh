#!/usr/bin/env bash
# measure_autotune.sh: what CHORUS_AUTOTUNE chooses for the two training
# workloads of performance.md and what that gains, at np = 2:
#   ResNet-18 (benchmarks/synthetic_benchmark, the compare_ddp.sh workload) and
#   the main job's CNN on Fashion-MNIST (examples/train_fashion_mnist).
# Each workload runs twice, with the defaults and with autotune on. Printed:
# images/s over the second half of each run (autotune has finished its search
# by then; the first half holds its trials), and from the autotune log the
# median bytes/s of the trial at the default settings against the final
# choice's, which were measured in the same run.
#
#   scripts/measure_autotune.sh [--build DIR] [--sample-ms MS] [--iters N] [--keep DIR]
#
# --build DIR      a build with LibTorch (default: $CHORUS_BUILD_DIR or build)
# --sample-ms MS   CHORUS_AUTOTUNE_SAMPLE_MS for the tuned runs (default 300)
# --iters N        ResNet-18 timed iterations of 10 batches (default 40)
# --keep DIR       keep the logs and autotune CSVs there
# On a shared machine, run it alone: it measures throughput.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
sample_ms=300
iters=40
keep=""
die() { echo "measure_autotune: error: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --build) build=${2:-}; shift 2 ;;
    --sample-ms) sample_ms=${2:-}; shift 2 ;;
    --iters) iters=${2:-}; shift 2 ;;
    --keep) keep=${2:-}; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
chorusrun="$build/launcher/chorusrun"
resnet="$build/benchmarks/synthetic_benchmark"
fashion="$build/examples/train_fashion_mnist"
for f in "$chorusrun" "$resnet" "$fashion"; do [[ -x $f ]] || die "$f not found: build with LibTorch first"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
logs=${keep:-$(mktemp -d)}
mkdir -p "$logs"
[[ -n $keep ]] || trap 'rm -rf "$logs"' EXIT
tune=(-x CHORUS_AUTOTUNE=1 -x CHORUS_AUTOTUNE_SAMPLE_MS="$sample_ms")

# Mean of the numbers in the second half of the lines matching $2 (field $3).
second_half_mean() {
  grep -E "$2" "$1" | awk -v f="$3" '{ v[NR] = $f } END {
    if (NR < 2) { print "n/a"; exit } s = 0; n = 0
    for (i = int(NR / 2) + 1; i <= NR; ++i) { s += v[i]; ++n } printf "%.1f", s / n }'
}
# "threshold/wait/cycle: bytes/s" of the trial at the defaults and of the choice.
log_summary() {
  awk -F, 'NR > 1 && $1 != "final" && $2 == 134217728 && $3 == 200 && $4 == 1 && !d { d = $5 }
           $1 == "final" { t = $2 / 1048576; w = $3; c = $4; f = $5 }
           END { printf "trial at the defaults %s B/s; final %s MiB, %s us, %s ms: %s B/s (x%.2f)\n",
                        d, t, w, c, f, (d > 0 ? f / d : 0) }' "$1"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$chorusrun" -np 2 "$resnet" --num-iters "$iters" >"$logs/resnet.default.txt" 2>&1
"$chorusrun" -np 2 "${tune[@]}" -x CHORUS_AUTOTUNE_LOG="$logs/resnet.autotune.csv" "$resnet" --num-iters "$iters" \
  >"$logs/resnet.autotune.txt" 2>&1
echo "ResNet-18, images/s on rank 0 over the second half: defaults $(second_half_mean "$logs/resnet.default.txt" '^Iter #' 3)," \
     "autotune $(second_half_mean "$logs/resnet.autotune.txt" '^Iter #' 3)"
echo "  autotune log: $(log_summary "$logs/resnet.autotune.csv")"
"$chorusrun" -np 2 "$fashion" --epochs 1 --batch-size 64 --threads 1 >"$logs/fashion.default.txt" 2>&1
"$chorusrun" -np 2 "${tune[@]}" -x CHORUS_AUTOTUNE_LOG="$logs/fashion.autotune.csv" "$fashion" --epochs 1 --batch-size 64 \
  --threads 1 >"$logs/fashion.autotune.txt" 2>&1
echo "Fashion-MNIST, images/s (both ranks) over the second half: defaults" \
     "$(second_half_mean "$logs/fashion.default.txt" 'images/s' 8), autotune $(second_half_mean "$logs/fashion.autotune.txt" 'images/s' 8)"
echo "  autotune log: $(log_summary "$logs/fashion.autotune.csv")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
