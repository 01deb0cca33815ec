#!/usr/bin/env bash
# A rank killed with SIGKILL in a job started without MPI (run_tcp_job.sh):
# every other rank must exit non-zero with a message naming the dead rank,
# within CHORUS_PEER_TIMEOUT_SECONDS (a closed connection is known at once),
# and the job must leave nothing in /dev/shm. Rank 0 and a non-zero rank,
# 2 and 3 ranks, on one host (shared memory) and as separate hosts (ring).
#   tcp_faults.sh RUN_TCP_JOB FAULT_JOB
set -uo pipefail
run_job=$1 fault_job=$2
timeout_s=20  # CHORUS_PEER_TIMEOUT_SECONDS for these jobs
failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

check() {  # NP VICTIM HOSTS
  local np=$1 victim=$2 hosts=$3
  local what="np=$np victim=$victim ${hosts:+separate hosts}${hosts:-one host}"
  local start=$SECONDS
  env ${hosts:+TCP_JOB_HOSTS=1} CHORUS_PEER_TIMEOUT_SECONDS=$timeout_s \
    timeout -k 3 $((timeout_s + 30)) "$run_job" "$np" "$fault_job" 1000000 4096 1 kill "$victim" 30 > "$out" 2>&1
  local rc=$? took=$((SECONDS - start))
  local ok=1
  [[ $rc -ne 0 && $rc -ne 124 ]] || { echo "FAIL $what: job exit $rc"; ok=0; }
  [[ $took -le $timeout_s ]] || { echo "FAIL $what: took ${took}s (peer timeout ${timeout_s}s)"; ok=0; }
  for ((r = 0; r < np; r++)); do
    [[ $r -eq $victim ]] && continue
    grep -q "^\[$r\] .*rank $victim" "$out" || { echo "FAIL $what: rank $r did not name rank $victim"; ok=0; }
    grep -q "^\[$r\] fault_job: rank $r done" "$out" && { echo "FAIL $what: rank $r finished as if nothing happened"; ok=0; }
  done
  local pid0
  pid0=$(sed -n 's/^\[0\] fault_job: rank 0 pid \([0-9]*\) .*/\1/p' "$out")
  if [[ -n "$pid0" ]] && ls /dev/shm 2>/dev/null | grep -q "^chorus\.$pid0\."; then
    echo "FAIL $what: left /dev/shm/chorus.$pid0.* behind"
    ok=0
    rm -f /dev/shm/chorus."$pid0".*
  fi
  if [[ $ok -eq 1 ]]; then
    echo "ok   $what: job exit $rc after ${took}s"
  else
    failures=$((failures + 1))
    sed 's/^/    | /' "$out" | tail -20
  fi
}

for np in 2 3; do
  for victim in 0 $((np - 1)); do
    check "$np" "$victim" ""
    check "$np" "$victim" 1
  done
done
[[ $failures -eq 0 ]] && echo "all fault checks passed"
exit $((failures > 0))
