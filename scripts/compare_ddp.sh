#!/usr/bin/env bash
# compare_ddp.sh: the seed article's ResNet-18 workload (batch 32 per rank of
# 3x32x32 images, SGD lr 0.01 x size, 1 compute thread per rank) with
# PyTorch DDP (gloo) and with Chorus, at np = 1 and 2, under the same malloc
# setting; prints images/s, scaling efficiency imgs/s(2) / (2 x imgs/s(1))
# and the ratio Chorus / DDP. Each round also runs two Chorus np=1 jobs at
# the same time, each its own job with no communication: their summed
# images/s is this machine's ceiling for any np=2 run (two ranks sharing the
# cores and memory, nothing exchanged), measured in the same run.
#
#   scripts/compare_ddp.sh [--malloc tuned|default|out-of-box] [--rounds R]
#                          [--build DIR] [--python PY] [--job-timeout S]
#                          [--chorusrun-arg ARG]... [-- BENCHMARK ARGS...]
#
# --malloc tuned       GLIBC_TUNABLES set to chorusrun's tuning for both (default)
#          default     glibc's defaults for both (chorusrun --no-malloc-tuning)
#          out-of-box  what each does with no environment: DDP on glibc's
#                      defaults, Chorus with chorusrun's own tuning
# --rounds R           run the four jobs R times, DDP and Chorus alternating;
#                      the table shows the mean of the rounds
# --job-timeout S      fail a job (and the script) that runs longer (default 900)
# --chorusrun-arg ARG  one more chorusrun flag for the Chorus jobs (repeatable),
#                      e.g. --chorusrun-arg=--mpi-args="--mca mpi_yield_when_idle 1"
# Arguments after -- go to both benchmarks (e.g. -- --num-iters 5).
# Needs a build with LibTorch (build/benchmarks/synthetic_benchmark) and
# python3-torch. On a shared machine, run it alone (one benchmark at a time).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
python="${PYTHON:-/usr/bin/python3}"  # Debian's python3-torch; a pyenv python3 has no torch
malloc=tuned
rounds=1
job_timeout=900
bench_args=()
extra_chorus_flags=()
tuned_tunables="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=268435456"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
die() { echo "compare_ddp: error: $*" >&2; exit 2; }

while (($#)); do
  case $1 in
    --malloc) malloc=${2:-}; shift 2 ;;
    --rounds) rounds=${2:-}; shift 2 ;;
    --build) build=${2:-}; shift 2 ;;
    --python) python=${2:-}; shift 2 ;;
    --job-timeout) job_timeout=${2:-}; shift 2 ;;
    --chorusrun-arg) extra_chorus_flags+=("${2:-}"); shift 2 ;;
    --chorusrun-arg=*) extra_chorus_flags+=("${1#--chorusrun-arg=}"); shift ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case $malloc in tuned|default|out-of-box) ;; *) die "--malloc must be tuned, default or out-of-box, not '$malloc'" ;; esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, not '$rounds'"
[[ $job_timeout =~ ^[1-9][0-9]*$ ]] || die "--job-timeout must be a positive number of seconds, not '$job_timeout'"
chorusrun="$build/launcher/chorusrun"
benchmark="$build/benchmarks/synthetic_benchmark"
ddp_script="$root/benchmarks/synthetic_benchmark/ddp_benchmark.py"
[[ -x $chorusrun ]] || die "$chorusrun not found: build Chorus first (scripts/build.sh)"
[[ -x $benchmark ]] || die "$benchmark not found: it needs a build with LibTorch (libtorch-dev)"
"$python" -c 'import torch' 2>/dev/null || die "$python cannot import torch: install python3-torch or pass --python"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
chorus_flags=()
case $malloc in
  tuned) export GLIBC_TUNABLES=$tuned_tunables ;;
  default) unset GLIBC_TUNABLES; chorus_flags=(--no-malloc-tuning) ;;
  out-of-box) unset GLIBC_TUNABLES ;;
esac

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# RESULT line -> total images/s; fails loudly when the run printed none.
total_of() {
  local v
  v=$(sed -n 's/^RESULT np=[0-9]* imgs_per_sec_total=\([0-9.]*\) .*/\1/p' "$1" | tail -n1)
  [[ -n $v ]] || { cat "$1" >&2; die "no RESULT line in the output above"; }
  echo "$v"
}

# One DDP job: np processes with torch.distributed's env:// variables.
run_ddp() {
  local np=$1 log=$2 port pids=() r rc=0
  # A port free now (a random one may be another program's: rank 0 then
  # fails to listen and the others wait for it until --job-timeout).
  port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for ((r = 0; r < np; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$np MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GLOO_SOCKET_IFNAME=lo \
      timeout -k 10 "$job_timeout" "$python" "$ddp_script" "${bench_args[@]}" >"$log.rank$r" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do wait "${pids[$r]}" || rc=$?; done
  cat "$log.rank0" >"$log"
  if ((rc != 0)); then cat "$log".rank* >&2; die "DDP np=$np failed (exit code $rc)"; fi
}

run_chorus() {
  local np=$1 log=$2
  timeout -k 10 "$job_timeout" "$chorusrun" -np "$np" "${chorus_flags[@]}" "${extra_chorus_flags[@]}" "$benchmark" "${bench_args[@]}" >"$log" 2>&1 ||
    { cat "$log" >&2; die "Chorus np=$np failed"; }
}

# Two independent np=1 jobs at once; prints their summed images/s.
run_ceiling() {
  local log=$1 pids=() k rc=0 total=0 v
  for k in a b; do
    timeout -k 10 "$job_timeout" "$chorusrun" -np 1 "${chorus_flags[@]}" "${extra_chorus_flags[@]}" "$benchmark" \
      "${bench_args[@]}" >"$log.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${!pids[@]}"; do wait "${pids[$k]}" || rc=$?; done
  if ((rc != 0)); then cat "$log".? >&2; die "the two independent np=1 jobs failed (exit code $rc)"; fi
  for k in a b; do
    v=$(total_of "$log.$k")
    total=$(awk -v a="$total" -v b="$v" 'BEGIN { print a + b }')
  done
  echo "RESULT np=2 imgs_per_sec_total=$total (two independent np=1 jobs at once)" >"$log"
}

declare -A sum=([ddp1]=0 [ddp2]=0 [chorus1]=0 [chorus2]=0 [ceiling2]=0)
for ((round = 1; round <= rounds; round++)); do
  for job in ddp1 ddp2 chorus1 chorus2 ceiling2; do
    np=${job: -1}
    log="$logs/$job.$round"
    echo "compare_ddp: round $round/$rounds: ${job%?} np=$np ..." >&2
    case $job in
      ddp*) run_ddp "$np" "$log" ;;
      chorus*) run_chorus "$np" "$log" ;;
      ceiling*) run_ceiling "$log" ;;
    esac
    v=$(total_of "$log")
    echo "compare_ddp:   $(grep '^RESULT' "$log")" >&2
    sum[$job]=$(awk -v a="${sum[$job]}" -v b="$v" 'BEGIN { print a + b }')
  done
done

case $malloc in
  tuned) setting="GLIBC_TUNABLES=$GLIBC_TUNABLES for both" ;;
  default) setting="glibc defaults for both (chorusrun --no-malloc-tuning)" ;;
  out-of-box) setting="DDP: glibc defaults, Chorus: chorusrun's default tuning" ;;
esac
[[ ${#extra_chorus_flags[@]} -eq 0 ]] || setting+="; chorusrun ${extra_chorus_flags[*]}"
awk -v rounds="$rounds" -v malloc="$malloc" -v setting="$setting" \
    -v d1="${sum[ddp1]}" -v d2="${sum[ddp2]}" -v c1="${sum[chorus1]}" -v c2="${sum[chorus2]}" \
    -v x2="${sum[ceiling2]}" 'BEGIN {
  d1 /= rounds; d2 /= rounds; c1 /= rounds; c2 /= rounds; x2 /= rounds
  printf "ResNet-18, batch 32 per rank, 1 thread per rank; malloc %s: %s; mean of %d round(s)\n",
         malloc, setting, rounds
  printf "%-12s %12s %12s %12s\n", "", "np=1 img/s", "np=2 img/s", "efficiency"
  printf "%-12s %12.1f %12.1f %12.2f\n", "PyTorch DDP", d1, d2, d2 / (2 * d1)
  printf "%-12s %12.1f %12.1f %12.2f\n", "Chorus", c1, c2, c2 / (2 * c1)
  printf "%-12s %12.2f %12.2f %12.2f\n", "Chorus/DDP", c1 / d1, c2 / d2, (c2 / (2 * c1)) / (d2 / (2 * d1))
  printf "%-12s %12s %12.1f %12.2f   (two independent np=1 Chorus jobs at once: the ceiling)\n", "No comm.", "", x2, x2 / (2 * c1)
  printf "ceiling / DDP np=2 = %.2f: no np=2 run here can beat DDP by more; Chorus reaches %.2f of the ceiling\n", x2 / d2, c2 / x2
}'
