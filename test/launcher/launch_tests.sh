#!/usr/bin/env bash
# chorusrun for real: launches 2 and 3 ranks of rank_report and checks what
# each rank saw; exit codes; signal forwarding; per-rank logs; config file;
# every bad-input case exits non-zero with one error line and starts nothing.
# usage: launch_tests.sh CHORUSRUN RANK_REPORT
set -uo pipefail
chorusrun="$1" report="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

for np in 2 3; do
  out="$work/np$np.out"
  "$chorusrun" -np "$np" --fusion-threshold-mb 32 --cycle-time-ms 0.5 -x CHORUS_TEST_PROBE=hello "$report" \
    > "$out" 2> "$work/np$np.err"
  rc=$?
  [[ $rc -eq 0 ]] || fail "np $np exited $rc: $(cat "$work/np$np.err")"
  for ((r = 0; r < np; r++)); do
    want="REPORT rank=$r size=$np local_rank=$r local_size=$np cross_rank=0 cross_size=1 sum=$((np * (np + 1) / 2)) fusion=33554432 cycle_ms=0.5 stall_s=60 probe=hello netns="
    grep -qF "$want" "$out" && pass "np $np rank $r" || fail "np $np rank $r: want '$want', got: $(grep "rank=$r " "$out")"
  done
done

# The job's exit code is chorusrun's exit code.
"$chorusrun" -np 2 "$report" --exit-code 3 > /dev/null 2>&1
rc=$?
[[ $rc -eq 3 ]] && pass "exit code 3 propagates" || fail "exit code: want 3, got $rc"

# A rank that exits with an error while the others wait in a collective:
# they fail too once it is gone, but chorusrun returns the failing rank's own
# code and names it (several runs: which process ends first is a race).
# TMPDIR: the per-job exit-record folder must be gone afterwards.
source "$(dirname "${BASH_SOURCE[0]}")/../common/first_failure.sh"
first_failure_runs 3 "$chorusrun"
# A rank killed by a signal: chorusrun names it and returns 128 + the signal.
TMPDIR="$work/tmp" "$chorusrun" -np 3 "$report" --sleep 120 > "$work/kill.out" 2> "$work/kill.err" &
pid=$!
for _ in $(seq 100); do [[ $(grep -c "^REPORT" "$work/kill.out") -eq 3 ]] && break; sleep 0.2; done
kill -KILL "$(sed -n 's/^REPORT rank=1 .* pid=\([0-9]*\)$/\1/p' "$work/kill.out")"
wait "$pid"
rc=$?
grep -q "^chorusrun: rank 1 was killed by signal 9 (Killed), the first rank to fail" "$work/kill.err" && [[ $rc -eq 137 ]] &&
  pass "rank 1 killed: chorusrun exits 137 naming it" || fail "rank 1 killed: exit $rc, stderr: $(cat "$work/kill.err")"

left=$(find "$work/tmp" -mindepth 1 | wc -l)
[[ $left -eq 0 ]] && pass "exit-record folders removed" || fail "left in TMPDIR: $(find "$work/tmp" -mindepth 1)"

# --no-stall-check and the config file (the command line wins).
printf 'num-proc = 3\ncycle-time-ms = 4\n' > "$work/run.cfg"
"$chorusrun" --config-file "$work/run.cfg" --cycle-time-ms 0.25 --no-stall-check "$report" > "$work/cfg.out" 2>&1
lines=$(grep -c "cycle_ms=0.25 stall_s=0 " "$work/cfg.out")
[[ $lines -eq 3 ]] && pass "config file: 3 ranks, command line wins" || fail "config file run: $(cat "$work/cfg.out")"

# One log per rank.
"$chorusrun" -np 2 --output-filename "$work/logs" "$report" > /dev/null 2>&1
n=$(grep -rl "^REPORT" "$work/logs" 2>/dev/null | wc -l)
[[ $n -eq 2 ]] && pass "--output-filename: 2 rank logs" || fail "--output-filename: $n rank logs under $work/logs"

# --dry-run prints the mpirun command and runs nothing.
out=$("$chorusrun" -np 2 --dry-run "$report" 2>&1)
[[ $out == *mpirun*"-np 2"*rank_report* && $out != *REPORT* ]] && pass "--dry-run" || fail "--dry-run printed: $out"

# SIGTERM and SIGINT reach the job: chorusrun ends soon, and no rank is left behind.
for sig in TERM INT; do
  # A file of its own per signal: the previous run's REPORT lines must not
  # count for this one (the job truncates its file only once it is forked).
  "$chorusrun" -np 2 "$report" --sleep 120 > "$work/sig.$sig.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q "^REPORT" "$work/sig.$sig.out" && break; sleep 0.2; done
  start=$(date +%s)
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  took=$(($(date +%s) - start))
  sleep 1
  left=$(pgrep -f -- "$report --sleep 120" | wc -l)
  # Ranks told to stop did not fail on their own: no rank is blamed.
  blamed=$(grep -c "the first rank to fail" "$work/sig.$sig.out")
  [[ $rc -ne 0 && $took -le 20 && $left -eq 0 && $blamed -eq 0 ]] &&
    pass "SIG$sig: exit $rc after ${took}s, no ranks left, none blamed" ||
    fail "SIG$sig: exit $rc after ${took}s, $left ranks left, $blamed blamed: $(cat "$work/sig.$sig.out")"
  pkill -f -- "$report --sleep 120" 2>/dev/null
done

# Bad input: exit 2, one error line, nothing started.
source "$(dirname "${BASH_SOURCE[0]}")/../common/refused.sh"
refused "unknown flag" "" "$chorusrun" -np 2 --frobnicate "$report"
refused "-np 0" "" "$chorusrun" -np 0 "$report"
refused "malformed host spec" "" "$chorusrun" -np 2 -H "a:two" "$report"
refused "host name '.'" "" "$chorusrun" -np 2 -H ".:2" "$report"
refused "config file is a directory" "" "$chorusrun" -np 2 --config-file "$work" "$report"
refused "more ranks than remote slots" "" "$chorusrun" -np 5 -H remote-a:2,remote-b:2 "$report"
refused "missing program" "" "$chorusrun" -np 2 "$work/no-such-program"
refused "no mpirun on the PATH" "" env PATH=/nonexistent "$chorusrun" -np 2 "$report"
refused "missing hostfile" "" "$chorusrun" -np 2 --hostfile "$work/none" "$report"

if ((failures > 0)); then
  echo "launch_tests: $failures check(s) failed"
  exit 1
fi
echo "launch_tests: all checks passed"
