#!/usr/bin/env bash
# chorusrun --tcp when a rank cannot be started (here pipe2 runs out of
# file descriptors, as fork would out of processes): it exits at once with
# 127, naming the rank, and ends the ranks it did start; it used to count
# the rank as running and wait forever.
#   chorusrun_cannot_start.sh CHORUSRUN
set -uo pipefail
chorusrun=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ok=1
start=$SECONDS
(ulimit -n 7 && exec timeout -k 3 30 "$chorusrun" --tcp -np 6 sleep 20) > "$out" 2>&1
rc=$?
took=$((SECONDS - start))
[[ $rc -eq 127 ]] || { echo "FAIL: chorusrun exit $rc, want 127"; ok=0; }
grep -q "chorusrun: rank [0-9] could not be started (Too many open files)" "$out" || { echo "FAIL: no line naming the rank"; ok=0; }
[[ $took -le 10 ]] || { echo "FAIL: chorusrun took ${took}s to end"; ok=0; }
((ok)) || cat "$out"
((ok)) && echo "chorusrun, a rank that cannot start: all checks passed" || exit 1
