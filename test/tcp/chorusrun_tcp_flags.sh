#!/usr/bin/env bash
# chorusrun --tcp against each flag of docs/launcher.md: what works as it
# does under mpirun (-x, the tuning flags, --config-file, --hostfile,
# --output-filename, --start-timeout, the malloc tuning, the first failing
# rank's exit code from the exit records, --no-exit-report, --verbose,
# --dry-run, SIGTERM/SIGINT) and what is refused with one error line naming
# the flag (--mpi-args; --agent without --tcp; -p/-i with another agent).
#   chorusrun_tcp_flags.sh CHORUSRUN RANK_REPORT
set -uo pipefail
chorusrun=$1 report=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { timeout -k 3 60 "$chorusrun" --tcp "$@"; }
source "$(dirname "${BASH_SOURCE[0]}")/../common/refused.sh"

# -x VAR (from here) and -x VAR=VALUE, tuning flags, from a config file too.
CHORUS_TEST_PROBE=from-here run -np 2 -x CHORUS_TEST_PROBE --fusion-threshold-mb 2 "$report" > "$work/x.out" 2>&1
n=$(grep -Ec "^\[[01]\] REPORT rank=[01] size=2 .*fusion=2097152 .*probe=from-here " "$work/x.out")
[[ $n -eq 2 ]] && pass "-x VAR and a tuning flag reach both ranks" || fail "-x VAR: $(cat "$work/x.out")"
printf 'num-proc = 3\ncycle-time-ms = 4\ntcp = true\n' > "$work/run.cfg"
timeout -k 3 60 "$chorusrun" --config-file "$work/run.cfg" --cycle-time-ms 0.25 -x CHORUS_TEST_PROBE=set "$report" \
  > "$work/cfg.out" 2>&1
n=$(grep -Ec "^\[[012]\] REPORT .*cycle_ms=0.25 .*probe=set " "$work/cfg.out")
[[ $n -eq 3 ]] && pass "config file (tcp = true, 3 ranks), -x VAR=VALUE, command line wins" ||
  fail "config file: $(cat "$work/cfg.out")"
printf 'localhost slots=2\n' > "$work/hosts"
run -np 2 --hostfile "$work/hosts" "$report" > "$work/hf.out" 2>&1
n=$(grep -c "REPORT .*size=2 local_rank=[01] local_size=2 " "$work/hf.out")
[[ $n -eq 2 ]] && pass "--hostfile" || fail "--hostfile: $(cat "$work/hf.out")"

# One machine under several names (localhost, 127.0.0.1, an address of its
# own interfaces): its ranks run here and count each other, in the
# launcher's variables and in the runtime; a name that does not resolve is
# refused naming it.
own=$(hostname -I 2>/dev/null | awk '{print $1}')
for hosts in localhost:1,127.0.0.1:1 ${own:+localhost:1,$own:1}; do
  run -np 2 -H "$hosts" sh -c 'echo "ENV local_rank=$LOCAL_RANK local_size=$LOCAL_WORLD_SIZE cross_size=$HOROVOD_CROSS_SIZE"
                               exec "$0"' "$report" > "$work/one.out" 2>&1
  n=$(grep -Ec "^\[([01])\] ENV local_rank=\1 local_size=2 cross_size=1$" "$work/one.out")
  m=$(grep -Ec "^\[([01])\] REPORT rank=\1 size=2 local_rank=\1 local_size=2 " "$work/one.out")
  [[ $n -eq 2 && $m -eq 2 ]] && pass "-H $hosts: one machine, LOCAL_WORLD_SIZE=2 and local_size=2 on each rank" ||
    fail "-H $hosts: $(cat "$work/one.out")"
done
[[ -n $own ]] || echo "note: no address of this machine's own (hostname -I): only localhost and 127.0.0.1 tried"
refused "a host that does not resolve" "host 'no-such-host.invalid' of the host list does not resolve" \
  run -np 2 -H localhost:1,no-such-host.invalid:1 "$report"

# Malloc tuning: chorusrun's default, none with --no-malloc-tuning, the user's own kept.
tunables() { run -np 2 "$@" sh -c 'echo "T=$GLIBC_TUNABLES"' 2>&1 | sed -n 's/^\[1\] T=//p'; }
[[ $(tunables) == glibc.malloc.mmap_threshold=33554432:* ]] && pass "malloc tuning by default" ||
  fail "malloc tuning: '$(tunables)'"
[[ -z $(tunables --no-malloc-tuning) ]] && pass "--no-malloc-tuning" || fail "--no-malloc-tuning: '$(tunables --no-malloc-tuning)'"
[[ $(GLIBC_TUNABLES=glibc.malloc.arena_max=2 tunables) == glibc.malloc.arena_max=2 ]] &&
  pass "the user's GLIBC_TUNABLES kept" || fail "user's GLIBC_TUNABLES: '$(GLIBC_TUNABLES=glibc.malloc.arena_max=2 tunables)'"

# --output-filename: mpirun's layout, stdout and stderr apart, unprefixed;
# the terminal still gets every line with its rank in front.
run -np 2 --output-filename "$work/logs" sh -c 'echo "out $RANK"; echo "err $RANK" >&2' > "$work/of.out" 2> "$work/of.err"
ok=1
for r in 0 1; do
  [[ $(cat "$work/logs/1/rank.$r/stdout" 2>/dev/null) == "out $r" ]] || ok=0
  [[ $(cat "$work/logs/1/rank.$r/stderr" 2>/dev/null) == "err $r" ]] || ok=0
  grep -qx "\[$r\] out $r" "$work/of.out" && grep -qx "\[$r\] err $r" "$work/of.err" || ok=0
done
((ok)) && pass "--output-filename: DIR/1/rank.N/stdout and stderr" ||
  fail "--output-filename: $(find "$work/logs" -type f) / $(cat "$work/of.out" "$work/of.err")"
touch "$work/file"
refused "--output-filename on a file" "--output-filename: cannot make the folder '$work/file'" \
  run -np 2 --output-filename "$work/file" sh -c 'echo started'

# --start-timeout: rank 1 never comes to the rendezvous; rank 0 gives up
# after 2 s naming it, and chorusrun ends the job.
start=$SECONDS
run -np 2 --start-timeout 2 sh -c '[ "$RANK" = 1 ] && exec sleep 30; exec "$0"' "$report" > "$work/st.out" 2>&1
rc=$?
took=$((SECONDS - start))
[[ $rc -ne 0 && $took -le 12 ]] && grep -q "^\[0\] .*rank 1 never came" "$work/st.out" &&
  pass "--start-timeout 2: rank 0 names rank 1 and the job ends (exit $rc, ${took}s)" ||
  fail "--start-timeout: exit $rc after ${took}s: $(tail -5 "$work/st.out")"
refused "two rendezvous timeouts" "--start-timeout and --rendezvous-timeout-seconds" \
  run -np 2 --start-timeout 2 --rendezvous-timeout-seconds 3 "$report"

# The rank that fails first: its own code, named, though the others (told it
# is leaving) may end before it does. The exit-record folder goes away.
source "$(dirname "${BASH_SOURCE[0]}")/../common/first_failure.sh"
first_failure_runs 2 "$chorusrun" --tcp
[[ -z $(find "$work/tmp" -mindepth 1) ]] && pass "exit-record folders removed" || fail "left: $(find "$work/tmp" -mindepth 1)"
run -np 2 --no-exit-report --verbose "$report" --fail-rank 1 --exit-code 4 > "$work/ner.out" 2>&1
rc=$?
[[ $rc -ne 0 ]] && ! grep -q "exit hook" "$work/ner.out" && pass "--no-exit-report: no hook, exit $rc" ||
  fail "--no-exit-report: exit $rc: $(cat "$work/ner.out")"

# --verbose prints each rank's command and runs it; --dry-run runs nothing.
run -np 2 --verbose "$report" > "$work/v.out" 2>&1
[[ $(grep -c "^rank [01] on localhost: .*RANK=[01] .*rank_report (exit hook " "$work/v.out") -eq 2 &&
   $(grep -c "^\[[01]\] REPORT" "$work/v.out") -eq 2 ]] && pass "--verbose" || fail "--verbose: $(cat "$work/v.out")"
out=$(run -np 2 --dry-run "$report" 2>&1)
[[ $(grep -c "^rank [01] on localhost: " <<< "$out") -eq 2 && $out != *REPORT* ]] && pass "--dry-run" ||
  fail "--dry-run: $out"

# SIGTERM, SIGINT, SIGQUIT and SIGHUP reach every rank; no rank is blamed, none left.
for sig in TERM INT QUIT HUP; do
  # A file of its own per signal: the previous run's REPORT lines must not
  # count for this one (the job truncates its file only once it is forked).
  "$chorusrun" --tcp -np 2 "$report" --sleep 120 > "$work/sig.$sig.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [[ $(grep -c "REPORT" "$work/sig.$sig.out") -eq 2 ]] && break; sleep 0.2; done
  start=$SECONDS
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  took=$((SECONDS - start))
  left=0
  for p in $(sed -n 's/^\[[01]\] REPORT .* pid=\([0-9]*\)$/\1/p' "$work/sig.$sig.out"); do
    if kill -0 "$p" 2>/dev/null; then left=$((left + 1)); kill -9 "$p"; fi
  done
  [[ $rc -ne 0 && $took -le 10 && $left -eq 0 ]] && grep -q "^chorusrun: the job was stopped by signal" "$work/sig.$sig.out" &&
    ! grep -q "the first rank to fail" "$work/sig.$sig.out" && pass "SIG$sig: exit $rc after ${took}s, none blamed" ||
    fail "SIG$sig: exit $rc after ${took}s, $left left: $(cat "$work/sig.$sig.out")"
done

# Under nohup (SIGHUP ignored) a hang-up reaches no rank; SIGTERM still ends the job.
(trap '' HUP; exec "$chorusrun" --tcp -np 2 "$report" --sleep 120) > "$work/nohup.out" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ $(grep -c "REPORT" "$work/nohup.out") -eq 2 ]] && break; sleep 0.2; done
kill -HUP "$pid"
sleep 1
alive=0; kill -0 "$pid" 2>/dev/null && alive=1
kill -TERM "$pid"; wait "$pid"; rc=$?
[[ $alive -eq 1 && $rc -eq 143 ]] && pass "under nohup a SIGHUP ends nothing; SIGTERM then does (exit $rc)" ||
  fail "nohup: alive after SIGHUP $alive, exit $rc: $(cat "$work/nohup.out")"

# chorusrun killed outright: its ranks get SIGTERM (the parent-death signal), none stays.
"$chorusrun" --tcp -np 2 "$report" --sleep 120 > "$work/killed.out" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ $(grep -c "REPORT" "$work/killed.out") -eq 2 ]] && break; sleep 0.2; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null
sleep 1
left=0
for p in $(sed -n 's/^\[[01]\] REPORT .* pid=\([0-9]*\)$/\1/p' "$work/killed.out"); do
  if [[ $(ps -o stat= -p "$p" 2>/dev/null) == [^Z]* ]]; then left=$((left + 1)); kill -9 "$p"; fi
done
[[ $left -eq 0 && $(grep -c "REPORT" "$work/killed.out") -eq 2 ]] && pass "chorusrun killed by SIGKILL: no rank left" ||
  fail "chorusrun SIGKILLed: $left rank(s) left: $(cat "$work/killed.out")"

# A rank whose output outlives it (a process it started keeps the pipe):
# chorusrun ends a bounded moment after the last rank, not with that process.
start=$(date +%s)
run -np 2 /bin/sh -c 'sleep 30 & echo started' > "$work/held.out" 2>&1
rc=$? took=$(($(date +%s) - start))
pkill -f "^sleep 30$" 2>/dev/null
[[ $rc -eq 0 && $took -le 10 ]] && grep -q "^\[1\] started" "$work/held.out" && grep -q "not waiting for it" "$work/held.out" &&
  pass "output held open after the ranks ended: done after ${took}s" || fail "held output: exit $rc after ${took}s: $(cat "$work/held.out")"

# A rank is its process group: when one rank fails, what another started
# ends with it (a wrapper's program; a background process of a rank that
# already ended), not only the rank's own process.
leftover() {  # the pids written to $work/bg.* that still run (a zombie has ended)
  for f in "$work"/bg.*; do
    p=$(cat "$f")
    [[ $(ps -o stat= -p "$p" 2>/dev/null) == [^Z]* ]] && { echo "$p"; kill -9 "$p"; }
  done
}
for how in wait exit; do
  rm -f "$work"/bg.*
  run -np 3 sh -c 'if [ "$RANK" = 1 ]; then sleep 1; exit 3; fi
                   sleep 300 & echo $! > "$0/bg.$RANK"; [ "$1" = wait ] && wait; exit 0' "$work" "$how" \
    > "$work/pg.$how.out" 2>&1
  rc=$?
  sleep 0.5  # the SIGTERM is sent; its delivery is the kernel's
  left=$(leftover)
  [[ $rc -eq 3 && $(ls "$work"/bg.* | wc -l) -eq 2 && -z $left ]] &&
    pass "rank 1 failed: the others' background processes ended too (they $how)" ||
    fail "process groups ($how): exit $rc, left: $left: $(cat "$work/pg.$how.out")"
done

# horovodrun's spellings: --gloo for --tcp, --autotune as a switch, --disable-cache.
timeout -k 3 60 "$chorusrun" --gloo -np 2 --autotune --disable-cache -x CHORUS_TEST_PROBE=gloo "$report" > "$work/gloo.out" 2>&1
n=$(grep -Ec "^\[[01]\] REPORT rank=[01] size=2 .*probe=gloo " "$work/gloo.out")
[[ $n -eq 2 ]] && pass "--gloo --autotune --disable-cache" || fail "--gloo: $(cat "$work/gloo.out")"

# Refused: exit 2, one error line naming the flag, nothing started.
refused "--mpi-args" "--mpi-args goes to mpirun" "$chorusrun" --tcp -np 2 --mpi-args "--mca x y" "$report"
refused "--agent without --tcp" "--agent only applies with --tcp" "$chorusrun" -np 2 --agent ./enter "$report"
refused "-p with another agent" "-p and -i are ssh's options" "$chorusrun" --tcp -np 2 -H a:1,b:1 --agent ./enter -p 2222 "$report"

((failures == 0)) && echo "chorusrun --tcp flags: all checks passed" || { echo "$failures check(s) failed"; exit 1; }
