#!/usr/bin/env bash
# Bad input to a job started without MPI: every case must end quickly with
# a non-zero exit and a message naming what was wrong, never a hang.
#   tcp_bad_input.sh JOB   (JOB: chorus_fault_job, which calls chorus::init())
set -uo pipefail
job=$1
failures=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tcp=(CHORUS_TRANSPORT=tcp CHORUS_LOG_LEVEL=error)

# rank NAME LIMIT ENV... : starts one rank of the job in the background, its output in $dir/NAME.
rank() {
  local name=$1 limit=$2
  shift 2
  (env "${tcp[@]}" "$@" timeout -k 2 "$limit" "$job" 3 16 0 > "$dir/$name" 2>&1; echo "exit $?" >> "$dir/$name") &
}
# expect NAME PATTERN: that rank failed (not 0, not timed out) and said PATTERN.
expect() {
  local name=$1 pattern=$2 rc
  rc=$(sed -n 's/^exit //p' "$dir/$name")
  if [[ "$rc" == 0 || "$rc" == 124 || "$rc" == 137 ]] || ! grep -q -- "$pattern" "$dir/$name"; then
    echo "FAIL $name: exit $rc, expected a message with '$pattern':"
    sed 's/^/    | /' "$dir/$name" | tail -5
    failures=$((failures + 1))
  else
    echo "ok   $name: exit $rc: $(grep -m1 -o -- ".\{0,60\}$pattern.\{0,60\}" "$dir/$name")"
  fi
}

port=$(free_port)
rank no_port 10 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1
rank no_addr 10 RANK=1 WORLD_SIZE=2 MASTER_PORT="$port"
rank no_rank 10 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"
rank out_of_range 10 RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"
rank not_a_number 10 RANK=one WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"
rank bad_port 10 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=70000
wait
expect no_port "MASTER_PORT"
expect no_addr "MASTER_ADDR"
expect no_rank "no rank is set"
expect out_of_range "RANK=2 is out of range for WORLD_SIZE=2"
expect not_a_number "RANK='one' is not valid"
expect bad_port "MASTER_PORT='70000' is not valid"

# A port another process holds: rank 0 says so at once.
port=$(free_port)
python3 -c "import socket,time; s=socket.socket(); s.bind(('0.0.0.0',$port)); s.listen(); time.sleep(15)" &
holder=$!
sleep 0.5
rank port_in_use 10 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"
wait %rank 2>/dev/null; sleep 0.1
while ! grep -q '^exit' "$dir/port_in_use" 2>/dev/null; do sleep 0.2; done
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
expect port_in_use "Address already in use"

# Two processes claiming rank 1: all three fail at once, naming the clash.
port=$(free_port)
start=$SECONDS
for who in 0 1 1b; do rank "claim_$who" 20 RANK="${who%b}" WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"; done
wait
for who in 0 1 1b; do expect "claim_$who" "rank 1 was claimed twice"; done
[[ $((SECONDS - start)) -le 10 ]] || { echo "FAIL claim: took $((SECONDS - start)) s"; failures=$((failures + 1)); }

# Rank 2 never comes: ranks 0 and 1 fail after the rendezvous timeout, naming it.
port=$(free_port)
for r in 0 1; do
  rank "missing_$r" 30 RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_RENDEZVOUS_TIMEOUT_SECONDS=2
done
wait
for r in 0 1; do expect "missing_$r" "rank 2 never came"; done

# A rank of another job that reaches this job's port is refused, naming both jobs.
port=$(free_port)
rank other_job 20 RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_JOB_ID=B
sleep 0.3
rank this_job_0 20 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_JOB_ID=A \
  CHORUS_RENDEZVOUS_TIMEOUT_SECONDS=3
wait
expect other_job "belongs to job 'B'"
expect this_job_0 "rank 1 never came"

# Two jobs on one host at once, on their own ports: both complete.
for j in a b; do
  port=$(free_port)
  for r in 0 1; do rank "job_${j}_$r" 30 RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"; done
done
wait
for name in job_a_0 job_a_1 job_b_0 job_b_1; do
  if grep -q '^exit 0$' "$dir/$name"; then echo "ok   $name: completed"; else
    echo "FAIL $name:"; sed 's/^/    | /' "$dir/$name" | tail -5; failures=$((failures + 1)); fi
done

# The job's secret: a file its group or others may read is refused, naming
# it and its mode; CHORUS_REQUIRE_SECRET=1 without a secret is an error.
port=$(free_port)
echo "s3cret" > "$dir/secret"
chmod 644 "$dir/secret"
rank secret_mode 10 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_SECRET_FILE="$dir/secret"
rank secret_required 10 RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_REQUIRE_SECRET=1
wait
expect secret_mode "CHORUS_SECRET_FILE '$dir/secret' has mode 0644"
expect secret_required "CHORUS_REQUIRE_SECRET is on but rank 1 has no secret"
# Ranks with different secrets: rank 1 is refused at once, naming the variables.
port=$(free_port)
rank other_secret_0 20 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_SECRET=a \
  CHORUS_RENDEZVOUS_TIMEOUT_SECONDS=3
rank other_secret_1 20 RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" CHORUS_SECRET=b
wait
expect other_secret_1 "refused this rank's proof of the job's secret"
expect other_secret_0 "rank 1 never came"

[[ $failures -eq 0 ]] && echo "all bad-input checks passed"
exit $((failures > 0))
