#!/usr/bin/env bash
# chorusrun --tcp, a job whose rank 1 kills itself: chorusrun exits with
# that rank's code (137), says it failed first, the other ranks name it, and
# no rank is left running. (The suites under chorusrun --tcp:
# chorusrun_tcp_npN, run_tcp_suites.sh.)
#   chorusrun_tcp.sh CHORUSRUN FAULT_JOB
set -uo pipefail
chorusrun=$1 fault_job=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ok=1

start=$SECONDS
timeout -k 3 60 "$chorusrun" --tcp -np 3 "$fault_job" 1000000 1024 1 kill 1 20 > "$out" 2>&1
rc=$?
took=$((SECONDS - start))
[[ $rc -eq 137 ]] || { echo "FAIL: killed rank 1: chorusrun exit $rc, want 137"; ok=0; }
grep -q "chorusrun: rank 1 was killed by signal 9 (Killed), the first rank to fail" "$out" || { echo "FAIL: no first-failure line"; ok=0; }
for r in 0 2; do
  grep -q "^\[$r\] .*rank 1" "$out" || { echo "FAIL: rank $r did not name rank 1"; ok=0; }
done
[[ $took -le 10 ]] || { echo "FAIL: the job took ${took}s to end"; ok=0; }
for pid in $(sed -n 's/^\[[0-9]\] fault_job: rank [0-9] pid \([0-9]*\) .*/\1/p' "$out"); do
  if grep -qa chorus_fault_job "/proc/$pid/cmdline" 2>/dev/null; then echo "FAIL: pid $pid still runs"; ok=0; kill -9 "$pid"; fi
done
((ok)) || tail -20 "$out"
((ok)) && echo "chorusrun --tcp: all checks passed" || exit 1
