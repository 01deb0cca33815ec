#!/usr/bin/env bash
# A rank that stops (SIGSTOP between collectives, as `kill -STOP`, a
# debugger or a frozen host would do it) in a job without MPI: the kernel
# still acknowledges its connections, so only the heartbeat tells
# (CHORUS_HEARTBEAT_TIMEOUT_SECONDS; 3 s here, 30 by default). Every other
# rank must end with an error naming it and the knob within the timeout and
# 2 s; rank 0 and a non-zero rank, on one host (shared memory) and as
# separate hosts. And a rank that sleeps 3x the timeout in user code between
# collectives is no hung rank: that job finishes.
#   tcp_hung.sh RUN_TCP_JOB FAULT_JOB
set -uo pipefail
run_job=$1 fault_job=$2
timeout_s=3
failures=0
work=$(mktemp -d)
victims=()  # pids of stopped ranks, continued and killed on exit
cleanup() {
  local pid
  for pid in "${victims[@]}"; do kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

stamp() {  # each line prefixed with the time it arrived
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# The time of the first line matching $2 in file $1 ("" when none).
time_of() { grep -m1 -e "$2" "$1" | cut -d' ' -f1; }

check_stopped() {  # NP VICTIM HOSTS
  local np=$1 victim=$2 hosts=$3
  local where="one host"
  [[ -n $hosts ]] && where="separate hosts"
  local what="np=$np victim=$victim $where"
  local out=$work/stopped.$np.$victim.${hosts:-one}.log ok=1
  env ${hosts:+TCP_JOB_HOSTS=1} CHORUS_HEARTBEAT_TIMEOUT_SECONDS=$timeout_s \
    "$run_job" "$np" "$fault_job" 100000 4096 1 stop "$victim" 20 2>&1 | stamp > "$out" &
  local job=$! waited=0 r
  # Until every other rank ended (its error, or its exit), at most 30 s.
  while ((waited < 300)); do
    local ended=0
    for ((r = 0; r < np; r++)); do
      [[ $r -eq $victim ]] && continue
      grep -q "\[$r\] fault_job: rank $r: \|\[$r\] .*exits with code" "$out" && ended=$((ended + 1))
    done
    ((ended == np - 1)) && break
    sleep 0.1
    waited=$((waited + 1))
  done
  local pid
  pid=$(sed -n "s/.*\[$victim\] fault_job: rank $victim pid \([0-9]*\) .*/\1/p" "$out")
  [[ -n $pid ]] && victims+=("$pid") && kill -CONT "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$job"
  local stopped_at
  stopped_at=$(time_of "$out" "rank $victim sends itself signal")
  [[ -n $stopped_at ]] || { echo "FAIL $what: rank $victim never stopped"; ok=0; }
  for ((r = 0; r < np && ok; r++)); do
    [[ $r -eq $victim ]] && continue
    local said
    said=$(time_of "$out" "\[$r\] .*rank $victim.*CHORUS_HEARTBEAT_TIMEOUT_SECONDS=$timeout_s")
    if [[ -z $said ]]; then
      echo "FAIL $what: rank $r did not name rank $victim with the heartbeat timeout"
      ok=0
      continue
    fi
    local took
    took=$(awk -v a="$stopped_at" -v b="$said" 'BEGIN { printf "%.1f", b - a }')
    awk -v t="$took" -v l=$((timeout_s + 2)) 'BEGIN { exit !(t <= l) }' ||
      { echo "FAIL $what: rank $r named it after $took s (limit $((timeout_s + 2)) s)"; ok=0; }
    grep -q "\[$r\] fault_job: rank $r done" "$out" && { echo "FAIL $what: rank $r finished as if nothing happened"; ok=0; }
  done
  if ((ok)); then
    echo "ok   $what: every other rank named rank $victim $(awk -v a="$stopped_at" -v b="$(time_of "$out" "rank $victim.*HEARTBEAT")" 'BEGIN { printf "%.1f", b - a }') s after it stopped"
  else
    failures=$((failures + 1))
    cut -d' ' -f2- "$out" | sed 's/^/    | /' | tail -20
  fi
}

check_slow() {  # NP: a pause of 3x the timeout after each of two steps
  local np=$1
  local out=$work/slow.$np.log
  env CHORUS_HEARTBEAT_TIMEOUT_SECONDS=$timeout_s timeout -k 3 60 \
    "$run_job" "$np" "$fault_job" 2 4096 $((3 * timeout_s * 1000)) > "$out" 2>&1
  local rc=$? r ok=1
  [[ $rc -eq 0 ]] || { echo "FAIL slow np=$np: job exit $rc"; ok=0; }
  for ((r = 0; r < np; r++)); do
    grep -q "\[$r\] fault_job: rank $r done" "$out" || { echo "FAIL slow np=$np: rank $r did not finish"; ok=0; }
  done
  if ((ok)); then
    echo "ok   slow np=$np: $((3 * timeout_s)) s between collectives, the job finished"
  else
    failures=$((failures + 1))
    sed 's/^/    | /' "$out" | tail -20
  fi
}

for victim in 0 2; do
  check_stopped 3 "$victim" ""
  check_stopped 3 "$victim" 1
done
check_slow 2
[[ $failures -eq 0 ]] && echo "all hung-rank checks passed"
exit $((failures > 0))
