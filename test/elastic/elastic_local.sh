#!/usr/bin/env bash
# chorusrun's elastic mode on this machine, four "hosts" being four names
# of it (127.0.0.1..127.0.0.4, each its own blacklist entry): the worker
# (elastic_counter) trains, committing every step.
#  1. kill -9 one worker mid-training: the 3 others go on, every FINAL line
#     is OK (no committed step lost or doubled), the models agree.
#  2. kill -9 rank 0 (the rendezvous renumbers; the new rank 0 syncs).
#  3. kill -9 two at once.
#  4. SIGSTOP rank 1, then rank 0: the others name it through the heartbeat
#     and reset without it within its timeout and 2 s; the driver ends it
#     after the join grace, 3 go on.
#  5. a host added to the discovery script mid-job joins and gets the state.
#  6. below --min-np: the job fails with a message naming --min-np.
#  7. bad discovery scripts: missing, not executable, failing, garbage.
#  8. below --min-np, then a host added: the world forms again, all sync.
#  9. --reset-limit 0: the first reset fails the job, naming the flag.
# 10. one machine, the docs' own line (no -H, no script: one host of 3
#     slots): a worker killed is replaced there, the job ends at full size.
# 11. a host whose workers keep failing is blacklisted after its failure
#     budget; with fixed hosts all out the job fails at once, saying why.
# 12. a host leaves discovery: its worker finishes its step and leaves; the
#     others go on from that commit with no rollback, every step done once;
#     the first world's ranks follow host order.
# 13. a host the agent cannot reach (ssh's exit 255 before its worker
#     reached the rendezvous) is blacklisted at once, not retried within
#     the failure budget; the job goes on with the others.
# usage: elastic_local.sh CHORUSRUN ELASTIC_COUNTER
set -uo pipefail
chorusrun="$1" counter="$2"
work="$(mktemp -d)"
trap 'pkill -9 -f "^$counter" 2>/dev/null; rm -rf "$work"' EXIT
ok=1
fail() { echo "FAIL: $*"; ok=0; }

hosts_script() {  # hosts_script FILE HOST...: a discovery script printing HOST:1 lines
  local f="$1"; shift
  { echo '#!/bin/sh'; for h in "$@"; do echo "echo $h:1"; done; } > "$f"
  chmod +x "$f"
}

# run_job NAME STEPS [chorusrun flags...] -- starts the job in the background
run_job() {
  local name="$1" steps="$2"; shift 2
  "$chorusrun" "$@" "$counter" --steps "$steps" --step-seconds 0.05 \
    > "$work/$name.out" 2>&1 &
  job_pid=$!
}

wait_steps() {  # wait_steps NAME N: until some rank printed step N (30 s at most)
  for _ in $(seq 300); do
    grep -q "^\[[0-9]*\] STEP $2 " "$work/$1.out" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

worker_pids() { pgrep -f "^$counter --steps" | sort -n; }

# check_final NAME SIZE: the job succeeded, SIZE FINAL lines, all OK and equal.
check_final() {
  local name="$1" size="$2"
  wait "$job_pid"; local code=$?
  local finals; finals="$(grep -c 'FINAL .* OK' "$work/$name.out")"
  if [[ $code -ne 0 || "$finals" -ne "$size" ]] || grep -q "WRONG" "$work/$name.out"; then
    tail -40 "$work/$name.out"; fail "$name: exit $code, $finals OK FINAL lines (want $size)"
    return
  fi
  local sums; sums="$(grep -o 'steps=[0-9]* checksum=[0-9.]*' "$work/$name.out" | sort -u | wc -l)"
  [[ "$sums" -eq 1 ]] || fail "$name: the ranks ended with different models"
  echo "$name: passed ($(grep -c '^\[[0-9]*\] RESET rank=0' "$work/$name.out") resets)"
}

hosts_script "$work/four" 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4
flags=(--min-np 2 --max-np 4 --host-discovery-script "$work/four")

# 1. one worker killed
run_job kill_one 120 "${flags[@]}"
wait_steps kill_one 20 || fail "kill_one: no step 20"
victim="$(worker_pids | sed -n 3p)"; kill -9 "$victim"
check_final kill_one 3

# 2. rank 0 killed: the first worker started is rank 0 of the first world
run_job kill_rank0 120 "${flags[@]}"
wait_steps kill_rank0 20 || fail "kill_rank0: no step 20"
kill -9 "$(worker_pids | sed -n 1p)"
check_final kill_rank0 3

# 3. two at once
run_job kill_two 120 "${flags[@]}"
wait_steps kill_two 20 || fail "kill_two: no step 20"
kill -9 $(worker_pids | sed -n '2p;4p')
check_final kill_two 2

# 4. rank 1, then rank 0 stopped: the heartbeat (no stall shutdown) turns
#    the hang into an error on the others, which reset without it within
#    its timeout and 2 s; the driver ends it after the join grace. Worker N
#    is the N-th pid.
for r in 1 0; do  # rank 0 too: the others hear nothing from it
  CHORUS_HEARTBEAT_TIMEOUT_SECONDS=3 CHORUS_ELASTIC_JOIN_GRACE_SECONDS=1 run_job stopped$r 150 "${flags[@]}"
  wait_steps stopped$r 20 || fail "stopped$r: no step 20"
  n="$(grep -m1 -o "^\[[0-9]*\] STEP [0-9]* rank=$r " "$work/stopped$r.out" | sed 's/^\[\([0-9]*\)\].*/\1/')"
  kill -STOP "$(worker_pids | sed -n "${n}p")"
  stopped_at=$EPOCHREALTIME
  check_final stopped$r 3
  reset_at="$(sed -n 's/^\[[0-9]*\] RESET rank=0 size=3 t=\([0-9.]*\)$/\1/p' "$work/stopped$r.out" | head -1)"
  took="$(awk -v a="$stopped_at" -v b="${reset_at:-0}" 'BEGIN { printf "%.1f", b - a }')"
  echo "stopped$r: the others reset without it ${took} s after it stopped (heartbeat timeout 3 s)"
  awk -v t="$took" 'BEGIN { exit !(t > 0 && t <= 5) }' || fail "stopped$r: reset ${took} s after the stop (limit 5 s)"
done

# 12. a host removed mid-job: Horovod's graceful removal (HostsUpdatedInterrupt
#     at the next commit). No RESTORE line (nothing rolled back), each step
#     printed once by rank 0 (no step lost or done twice), and the removed
#     worker left after its step, not stopped in the middle of one.
hosts_script "$work/shrinking" 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4
run_job removed 150 --min-np 2 --max-np 4 --host-discovery-script "$work/shrinking"
wait_steps removed 20 || fail "removed: no step 20"
hosts_script "$work/shrinking" 127.0.0.1 127.0.0.2 127.0.0.3
check_final removed 3
grep -q "size=3" "$work/removed.out" || fail "removed: the world never shrank to 3"
grep -q "RESTORE" "$work/removed.out" && fail "removed: a rank rolled back: $(grep -m1 RESTORE "$work/removed.out")"
grep -q "worker 4 on 127.0.0.4 left after its last committed step" "$work/removed.out" ||
  fail "removed: worker 4 did not leave after its step"
# Worker N started on host N (the script's order): rank N-1 in the first world.
out_of_order="$(grep -E '^\[[0-9]+\] STEP 1 rank=' "$work/removed.out" |
  awk '{ n = substr($1, 2, length($1) - 2); split($4, r, "="); if (r[2] != n - 1) print }')"
[[ -z "$out_of_order" ]] || fail "removed: the first world's ranks are not in host order: $out_of_order"
rank0_steps="$(grep -o '^\[[0-9]*\] STEP [0-9]* rank=0 ' "$work/removed.out" | awk '{print $3}')"
[[ "$(sort -n <<< "$rank0_steps" | uniq | wc -l)" -eq 150 && "$(wc -l <<< "$rank0_steps")" -eq 150 ]] ||
  fail "removed: rank 0 printed $(wc -l <<< "$rank0_steps") steps, $(sort -n <<< "$rank0_steps" | uniq | wc -l) distinct (want 150 once each)"

# 13. an unreachable host of two slots: the fake agent (ssh's part) fails
#     for 192.0.2.1 (TEST-NET-1) as ssh does, and runs the rest here.
printf '#!/bin/sh\necho 127.0.0.1:1\necho 127.0.0.2:1\necho 192.0.2.1:2\n' > "$work/unreachable"
chmod +x "$work/unreachable"
cat > "$work/agent" <<'AGENT'
#!/bin/sh
host=$1; shift
case "$host" in 192.0.2.1) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255 ;; esac
exec sh -c "$*"
AGENT
chmod +x "$work/agent"
run_job unreachable 40 --tcp --agent "$work/agent" --min-np 2 --max-np 4 --host-discovery-script "$work/unreachable"
check_final unreachable 2
grep -q "on 192.0.2.1 exited with code 255 before it reached the rendezvous: the agent could not reach the host; its host is blacklisted" \
  "$work/unreachable.out" || fail "unreachable: the host was not blacklisted at once as unreachable"
grep -q "replaced on its host" "$work/unreachable.out" && fail "unreachable: a worker of an unreachable host was replaced"

# 5. a host added mid-job
hosts_script "$work/growing" 127.0.0.1 127.0.0.2
run_job added 150 --min-np 2 --max-np 4 --host-discovery-script "$work/growing"
wait_steps added 20 || fail "added: no step 20"
hosts_script "$work/growing" 127.0.0.1 127.0.0.2 127.0.0.3
check_final added 3
grep -q "size=3" "$work/added.out" || fail "added: the world never grew to 3"

# 6. below --min-np past the timeout
run_job below 400 --min-np 3 --max-np 4 --elastic-timeout 3 --host-discovery-script "$work/four"
wait_steps below 10 || fail "below: no step 10"
kill -9 $(worker_pids | sed -n '1p;2p')
wait "$job_pid"; code=$?
[[ $code -ne 0 ]] && grep -q -- "--min-np" "$work/below.out" || { tail -20 "$work/below.out"; fail "below: exit $code without naming --min-np"; }

# 8. below --min-np, then a new host: the world forms again with it and every
#    rank syncs (horovod#3494 deadlocks here: one side skips the sync)
hosts_script "$work/regrow" 127.0.0.1 127.0.0.2 127.0.0.3
run_job regrow 150 --min-np 3 --max-np 3 --host-discovery-script "$work/regrow"
wait_steps regrow 20 || fail "regrow: no step 20"
kill -9 "$(worker_pids | sed -n 2p)"
sleep 2  # two workers wait, below --min-np
hosts_script "$work/regrow" 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.5
check_final regrow 3

# 9. --reset-limit 0: the first reset fails the job, saying so
run_job limit 400 --reset-limit 0 "${flags[@]}"
wait_steps limit 10 || fail "limit: no step 10"
kill -9 "$(worker_pids | sed -n 2p)"
wait "$job_pid"; code=$?
[[ $code -ne 0 ]] && grep -q -- "more than --reset-limit 0" "$work/limit.out" ||
  { tail -20 "$work/limit.out"; fail "limit: exit $code without naming --reset-limit"; }

# 10. one machine: the killed worker is replaced on its host (failure budget)
run_job one_machine 150 --min-np 2 --max-np 3 -np 3
wait_steps one_machine 20 || fail "one_machine: no step 20"
kill -9 "$(worker_pids | sed -n 2p)"
check_final one_machine 3
grep -q "replaced on its host" "$work/one_machine.out" || fail "one_machine: the killed worker was not replaced"

# 11. worker 1 runs; every other worker fails at once: two replacements (the
# default budget), the third failure blacklists the host, and with no host
# left the job fails at once, not after --elastic-timeout (600 s)
began=$SECONDS
timeout 60 "$chorusrun" --min-np 1 -np 2 sh -c \
  'case "$CHORUS_ELASTIC_MEMBER" in *"#1") sleep 30 ;; *) sleep 0.5; exit 1 ;; esac' > "$work/keeps_failing.out" 2>&1
code=$?
replaced="$(grep -c "replaced on its host" "$work/keeps_failing.out")"
if [[ $code -ne 1 || "$replaced" -ne 2 ]] || ! grep -q "its host is blacklisted" "$work/keeps_failing.out" ||
   ! grep -q "no worker can come back" "$work/keeps_failing.out" || (( SECONDS - began > 30 )); then
  cat "$work/keeps_failing.out"; fail "keeps_failing: exit $code, $replaced replacements, $((SECONDS - began)) s"
fi

# 7. bad discovery scripts: a clear error, never a hang
printf '#!/bin/sh\necho "not a host line!"\n' > "$work/garbage"; chmod +x "$work/garbage"
printf '#!/bin/sh\necho oops >&2; exit 3\n' > "$work/failing"; chmod +x "$work/failing"
printf 'echo 127.0.0.1:1\n' > "$work/not_executable"
for s in missing garbage failing not_executable; do
  timeout 20 "$chorusrun" --min-np 1 --host-discovery-script "$work/$s" "$counter" > "$work/bad_$s.out" 2>&1
  code=$?
  if [[ $code -eq 0 || $code -eq 124 ]] || ! grep -q "$work/$s" "$work/bad_$s.out"; then
    cat "$work/bad_$s.out"; fail "discovery script '$s': exit $code, the script not named"
  fi
done

# a bad join grace: an error naming the variable, before any worker starts
CHORUS_ELASTIC_JOIN_GRACE_SECONDS=abc timeout 20 "$chorusrun" --min-np 1 --host-discovery-script "$work/four" \
  "$counter" > "$work/bad_grace.out" 2>&1
code=$?
[[ $code -eq 2 ]] && grep -q "CHORUS_ELASTIC_JOIN_GRACE_SECONDS='abc'" "$work/bad_grace.out" ||
  { cat "$work/bad_grace.out"; fail "bad join grace: exit $code without naming the variable"; }

((ok)) && echo "elastic_local: all checks passed" || exit 1
