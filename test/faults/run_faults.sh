#!/usr/bin/env bash
# Fault tests: a job of chorus_fault_job ranks under mpirun, one rank made to
# fail, and what the others do about it. Checks that every rank ends within
# a bound, the exit code, the messages that docs/troubleshooting.md quotes
# for the fault (its table's "What you see" column), and that the job left
# nothing in /dev/shm. Never hangs: every job runs under a time limit, and
# whatever is left of it (a stopped rank) is continued and killed on exit.
#
# usage: run_faults.sh FAULT_JOB TROUBLESHOOTING_MD MPIEXEC [mpirun flags...]
set -u
job_bin=$1 table_md=$2 mpiexec=$3
shift 3
mpirun_flags=("$@")
work=$(mktemp -d)
failures=0
rank_pids=()
shm_patterns=()  # what this script's jobs may leave in /dev/shm (see expect_shm_clean)

# Whatever the jobs left: ranks (continued, then killed; mpirun then ends
# too) and shared-memory files, also of a case this script did not finish.
cleanup() {
  local pid pattern log
  for log in "$work"/*.log; do
    [[ -f $log ]] || continue
    for pid in $(sed -n 's/.*fault_job: rank [0-9]* pid \([0-9]*\) job.*/\1/p' "$log"); do rank_pids+=("$pid"); done
    shm_patterns+=($(sed -n 's/.*fault_job: rank 0 pid \([0-9]*\) job \([0-9]*\)$/\1 \2/p' "$log" |
      awk '{ printf "^chorus\\.%s\\. \\.%x\\.\n", $1, $2 }'))
  done
  for pid in "${rank_pids[@]}"; do
    grep -qa chorus_fault_job "/proc/$pid/cmdline" 2>/dev/null || continue  # gone, or the pid is reused
    kill -CONT "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
  done
  for pattern in "${shm_patterns[@]}"; do
    ls /dev/shm 2>/dev/null | grep -e "$pattern" | while IFS= read -r f; do rm -f "/dev/shm/$f"; done
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL [$case_name]: $*"
  failures=$((failures + 1))
}

# Prefixes each line with the time it arrived (seconds since the epoch).
stamp() {
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# A job near its time limit: what each of its processes (mpirun, ranks) was
# doing, to $out.ps, before timeout kills them all (names who hung).
snapshot_before_limit() {
  sleep "$1" &
  local nap=$! pids
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM  # the job ended first: no sleep outlives this
  wait "$nap"
  pids=$(pgrep -d, -f '^([^ ]*/)?(chorus_fault_job|mpiexec|mpirun|orted)( |$)') || return
  ps -o pid,ppid,stat,wchan:24,etime,args -p "$pids" > "$out.ps" 2>&1
}

# run_job NAME LIMIT NP [ENV=VALUE...] -- JOB ARGS: runs the job (calling
# $while_running, if set, once it started); sets rc, elapsed and out (the
# stamped output file).
run_job() {
  case_name=$1 limit=$2 np=$3
  shift 3
  local env_flags=()
  while [[ $1 != -- ]]; do env_flags+=(-x "$1"); shift; done
  shift
  out=$work/$case_name.log
  rm -f "$out.ps"
  local start=$EPOCHREALTIME
  {
    timeout -k 3 "$limit" "$mpiexec" -np "$np" "${mpirun_flags[@]}" "${env_flags[@]}" "$job_bin" "$@" 2>&1 | stamp > "$out"
    echo "${PIPESTATUS[0]}" > "$out.rc"
  } &
  local job=$!
  snapshot_before_limit "$((limit - 4))" &
  local snapshot=$!
  [[ -z ${while_running:-} ]] || "$while_running"
  wait "$job"
  ended_at=$EPOCHREALTIME
  kill "$snapshot" 2>/dev/null
  wait "$snapshot" 2>/dev/null
  [[ ! -s $out.ps ]] || { echo "[$case_name] still running $((limit - 4)) s in:"; cat "$out.ps"; }
  rc=$(cat "$out.rc" 2>/dev/null || echo none)
  elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  local pid
  for pid in $(sed -n 's/.*fault_job: rank [0-9]* pid \([0-9]*\) job.*/\1/p' "$out"); do rank_pids+=("$pid"); done
  echo "[$case_name] exit code $rc after $elapsed s"
}

# Seconds from the first line containing $1 to the first containing $2
# ($1 may also be a time, from the epoch).
seconds_between() {
  awk -v a="$1" -v b="$2" '
    BEGIN { if (a ~ /^[0-9.]+$/) ta = a }
    index($0, a) && !ta { ta = $1 }
    index($0, b) && !tb { tb = $1 }
    END { if (!ta || !tb) print "none"; else printf "%.2f", tb - ta }' "$out"
}

# Seconds from the first line containing $1 (or from the time $1) to the end of the job.
seconds_to_end() {
  awk -v a="$1" -v e="$ended_at" '
    BEGIN { if (a ~ /^[0-9.]+$/) ta = a }
    index($0, a) && !ta { ta = $1 }
    END { if (!ta) print "none"; else printf "%.2f", e - ta }' "$out"
}

# For while_running: once rank 2 has said its pid and had a second to get
# into its stream of large allreduces, stops it from outside (kill -STOP);
# sets stopped_at.
stop_rank_2_from_outside() {
  local pid="" i=0
  while [[ -z $pid ]] && ((i++ < 100)); do
    sleep 0.1
    pid=$(sed -n 's/.*fault_job: rank 2 pid \([0-9]*\) job.*/\1/p' "$out" 2>/dev/null)
  done
  [[ -n $pid ]] || return
  rank_pids+=("$pid")
  sleep 1
  kill -STOP "$pid"
  stopped_at=$EPOCHREALTIME
}

expect_line() { grep -qF -- "$1" "$out" || fail "no line with: $1"; }
expect_no_line() { ! grep -qF -- "$1" "$out" || fail "unexpected line with: $1"; }
expect_rc() { [[ $rc == "$1" ]] || fail "exit code $rc, expected $1"; }
expect_within() {  # what, seconds, bound
  echo "[$case_name] $1: $2 s (bound $3 s)"
  [[ $2 != none ]] && awk -v s="$2" -v b="$3" 'BEGIN { exit !(s <= b) }' ||
    fail "$1 took $2 s, bound $3 s"
}

# Every rank of the job is gone within 2 s of mpirun's exit (a zombie is
# gone too: its parent reaps it; a pid now used by another program is too).
expect_all_ended() {
  local pid state i
  for pid in $(sed -n 's/.*fault_job: rank [0-9]* pid \([0-9]*\) job.*/\1/p' "$out"); do
    for ((i = 0; i < 20; ++i)); do
      state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)
      [[ -z $state || $state == Z ]] && break
      grep -qa chorus_fault_job "/proc/$pid/cmdline" 2>/dev/null || { state=""; break; }
      sleep 0.1
    done
    [[ -z $state || $state == Z ]] || fail "rank process $pid still there 2 s after mpirun (state $state)"
  done
}

# Nothing of this job in /dev/shm: Open MPI's segments carry the job id in
# hex, Chorus's carry rank 0's pid.
expect_shm_clean() {
  local job pid0 left
  job=$(sed -n 's/.*fault_job: rank 0 pid [0-9]* job \([0-9]*\)$/\1/p' "$out" | head -1)
  pid0=$(sed -n 's/.*fault_job: rank 0 pid \([0-9]*\) job.*/\1/p' "$out" | head -1)
  [[ -n $job && -n $pid0 ]] || { fail "rank 0 did not say its pid and job"; return; }
  shm_patterns+=("\.$(printf '%x' "$job")\." "^chorus\.$pid0\.")
  left=$(ls /dev/shm 2>/dev/null | grep -e "${shm_patterns[-2]}" -e "${shm_patterns[-1]}" || true)
  [[ -z $left ]] || fail "left in /dev/shm: $left"
}

# The messages the troubleshooting table quotes for this case (the code
# spans in the "What you see" column of the row naming the case) must be in
# the job's output: the table stays true.
expect_table_quotes() {
  local row quote n=0
  row=$(grep -F -- "(\`$case_name\`)" "$table_md" | head -1)
  [[ -n $row ]] || { fail "no row for (\`$case_name\`) in $table_md"; return; }
  while IFS= read -r quote; do
    [[ -n $quote ]] || continue
    n=$((n + 1))
    expect_line "$quote"
  done < <(awk -F'|' '{ print $3 }' <<< "$row" | grep -o '`[^`]*`' | tr -d '`')
  ((n > 0)) || fail "the table's row for $case_name quotes no message"
}

finish_case() {
  expect_all_ended
  expect_shm_clean
  expect_table_quotes
  if ((failures > failures_before)); then sed 's/^[0-9.]* //' "$out" | tail -40; fi
  failures_before=$failures
}
failures_before=0

# A worker stopped between collectives, stall check N = 1 s, shutdown S = 2 s:
# rank 0 warns at N (not up to 2N), the job ends at S plus the bounded close
# (5 s), with the stall shutdown's exit code. Rank 0 stays alive, so no worker
# may blame it.
run_job stopped_worker 30 3 CHORUS_STALL_CHECK_TIME_SECONDS=1 CHORUS_STALL_SHUTDOWN_TIME_SECONDS=2 -- 100 1024 20 stop 2 5
expect_rc 75
expect_within "the first warning" "$(seconds_between 'sends itself signal' 'WARN] stall:')" 1.9
expect_within "the end of the job" "$(seconds_to_end 'sends itself signal')" 10
expect_line "[chorus 1 ERROR] Chorus was shut down (stall shutdown after 2 s"
expect_no_line "no word from the coordinator"
finish_case

# The coordinator (rank 0) stopped: the workers warn naming it at N = 1 s,
# and end the job at S = 3 s (nobody else can): after the bounded close
# (5 s), rank 1 does, 1 s later (rank r waits r seconds: one rank aborts).
run_job stopped_coordinator 30 3 CHORUS_STALL_CHECK_TIME_SECONDS=1 CHORUS_STALL_SHUTDOWN_TIME_SECONDS=3 -- 100 1024 20 stop 0 5
expect_rc 75
expect_within "the first warning" "$(seconds_between 'sends itself signal' 'WARN] stall:')" 1.9
expect_within "the end of the job" "$(seconds_to_end 'sends itself signal')" 12
expect_line "[chorus 2 WARN] stall: no word from the coordinator, rank 0, for 1 s while rank 2 waits for tensors 'grad.a', 'grad.b'"
finish_case

# A rank stopped, and rank 0 calls chorus::shutdown() (no stall settings):
# the shutdown cannot complete without the stopped rank, so after the
# bounded close (5 s) Chorus ends the job with exit code 76.
run_job shutdown_with_stopped_rank 30 3 -- 100 1024 20 stop+shutdown 2 5
expect_rc 76
expect_within "the end of the job" "$(seconds_to_end 'calls shutdown()')" 7
expect_line "fault_job: rank 1: allreduce of tensor 'grad.a' did not complete: Chorus was shut down (rank 0 called shutdown())"
finish_case

# A rank stopped from outside inside a collective (ranks run back-to-back
# 64 MB allreduces): the others wait inside it, where only the collective
# watchdog runs; it warns at N = 1 s and ends the job at S = 2 s.
# The stop can land between two allreduces instead (rank 2 never submitted
# the next one: the stopped_worker case above, ended by rank 0's stall
# check); that outcome is checked as such and the case run again, 3 tries.
for attempt in 1 2 3; do
  stopped_at=""
  while_running=stop_rank_2_from_outside run_job stopped_in_collective 30 3 CHORUS_STALL_CHECK_TIME_SECONDS=1 \
    CHORUS_STALL_SHUTDOWN_TIME_SECONDS=2 -- 100000 16777216 0
  ((attempt < 3)) && grep -qF "missing on ranks 2" "$out" || break
  echo "[stopped_in_collective] try $attempt: rank 2 was stopped between two allreduces; again"
  expect_rc 75
  expect_line "stall shutdown after 2 s: tensor 'grad.a' has waited 2 s: submitted by ranks 0, 1, missing on ranks 2"
  expect_all_ended
  expect_shm_clean
done
expect_rc 75
expect_within "the first warning" "$(seconds_between "${stopped_at:-none}" 'WARN] stall:')" 1.9
expect_within "the end of the job" "$(seconds_to_end "${stopped_at:-none}")" 5
finish_case

# A rank killed (SIGKILL) at 2 and 3 ranks, a worker and the coordinator:
# mpirun ends every survivor and names the killed rank; no stall settings.
for spec in "2 1" "3 1" "3 0"; do
  read -r np victim <<< "$spec"
  run_job "killed_rank_np${np}_rank${victim}" 30 "$np" -- 100 1024 20 kill "$victim" 5
  expect_rc 137
  expect_within "the end of the job" "$(seconds_to_end 'sends itself signal')" 5
  expect_line "noticed that process rank $victim with PID"
  case_name=killed_rank finish_case
done

if ((failures > 0)); then
  echo "$failures fault check(s) failed"
  exit 1
fi
echo "all fault checks passed"
