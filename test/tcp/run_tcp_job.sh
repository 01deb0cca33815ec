#!/usr/bin/env bash
# Starts a job of NP ranks on this host by hand, without MPI, the way
# torchrun would: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE per process. Output is prefixed with the rank; the exit
# status is the first failing rank's (0 when all pass).
#   run_tcp_job.sh NP PROGRAM [ARGS...]
# TCP_JOB_HOSTS=1: every rank gets its own CHORUS_HOST_ID (plays NP hosts,
# so no shared memory: the ring and the transport's collectives carry all).
# TCP_JOB_RANKS_PER_HOST=K: ranks r and r' share a host id when r/K = r'/K
# (plays NP/K hosts of K ranks each).
set -uo pipefail
np="$1"
shift
# A free port below the kernel's ephemeral range (32768 and up): a port the
# kernel hands out (bind to 0) can be taken again at once by another test's
# outgoing connection before rank 0 listens on it (seen under ASan: rank 0
# "cannot listen ... Address already in use"). Random, so parallel tests
# rarely pick the same one; checked free here.
port="$(python3 -c '
import random, socket
for _ in range(200):
    p = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("", p))
    except OSError:
        continue
    print(p)
    break
')"
pids=()
# Killed (a test timeout): take the ranks down too.
trap 'kill "${pids[@]}" 2>/dev/null; exit 143' TERM INT
for ((r = 0; r < np; r++)); do
  host_env=()
  local_rank=$r local_size=$np
  if [[ -n "${TCP_JOB_HOSTS:-}" ]]; then host_env=(CHORUS_HOST_ID="host$r"); fi
  if [[ -n "${TCP_JOB_RANKS_PER_HOST:-}" ]]; then
    per=$TCP_JOB_RANKS_PER_HOST
    host_env=(CHORUS_HOST_ID="host$((r / per))")
    local_rank=$((r % per)) local_size=$per
  fi
  (exec env MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" RANK="$r" WORLD_SIZE="$np" LOCAL_RANK="$local_rank" \
     LOCAL_WORLD_SIZE="$local_size" \
     "${host_env[@]}" "$@" 2>&1 | sed -u "s/^/[$r] /") &
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  rc=$?
  if [[ $rc -ne 0 && $status -eq 0 ]]; then status=$rc; fi
done
exit "$status"
