#!/usr/bin/env bash
# Strangers at a job's port (issue 36, docs/security.md): a job of 3 ranks
# with a secret meets while stranger.py, before rank 1 and rank 2 come,
# claims rank 1 with no secret and with a wrong one, sends garbage, opens
# 200 silent connections and a slow-loris one, and replays rank 1's real
# handshake (recorded by a relay that rank 1 reaches rank 0 through). Each
# must be refused or closed within the handshake timeout, the job's result
# must be what it is without them, its start-up at most 1 s slower than the
# same job's alone, and rank 0 must report the strangers' address once.
# With --hosts (root, `ip`): rank 0 on one network-namespace host, ranks 1
# and 2 and every stranger on another, rank 0 reached at its own address.
#   tcp_strangers.sh RANK_REPORT [--hosts]
set -uo pipefail
report=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d)
pids=()
master=127.0.0.1 stranger_host=127.0.0.1 on_a=() on_b=()
if [[ ${2:-} == --hosts ]]; then
  source "$here/../common/netns_pair.sh" chorus_s 10.233
  master=$ha stranger_host=$hb on_a=(ip netns exec "$nsa") on_b=(ip netns exec "$nsb")
fi
stranger=("${on_b[@]}" env STRANGER_HOST="$master" python3 "$here/stranger.py")
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"; [[ -n ${nsa:-} ]] && netns_pair_cleanup' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
secret=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
# A handshake timeout of 1 s, and rank 2 comes 1.5 s after the strangers: the
# slow and silent ones are closed by the deadline, not by the job's end.
job=(CHORUS_TRANSPORT=tcp WORLD_SIZE=3 CHORUS_SECRET="$secret" CHORUS_JOB_ID=strangers CHORUS_LOG_LEVEL=warning
     CHORUS_HANDSHAKE_TIMEOUT_SECONDS=1)

# rank NAME RANK PORT [MASTER]: one rank in the background (rank 0 on host
# a, the others on host b), its output in $dir/NAME.
rank() {
  local on=("${on_b[@]}")
  [[ $2 == 0 ]] && on=("${on_a[@]}")
  ("${on[@]}" env "${job[@]}" MASTER_ADDR="${4:-$master}" MASTER_PORT="$3" RANK="$2" timeout -k 2 60 "$report" \
     > "$dir/$1" 2>&1
   echo "exit $?" >> "$dir/$1") &
  pids+=($!)
}
ok_rank() {  # ok_rank NAME: exit 0 and the sum of ranks 1+2+3 (no stranger's number in it)
  grep -q '^exit 0$' "$dir/$1" && grep -q 'REPORT rank=.* size=3 .*sum=6 ' "$dir/$1" ||
    { fail "$1:"; sed 's/^/    | /' "$dir/$1" | tail -5; }
}

# The job alone: how long from its last rank's start to its end.
port=$(free_port)
start=$(now)
for r in 0 1 2; do rank "alone_$r" $r "$port"; done
wait "${pids[@]}"
alone=$(python3 -c "print(round($(now) - $start, 2))")
for r in 0 1 2; do ok_rank "alone_$r"; done
echo "the job alone: ${alone} s"

# The job among strangers.
port=$(free_port) relay=$(free_port)
pids=()
rank with_0 0 "$port"
sleep 0.3
"${stranger[@]}" silent "$port" 200 > "$dir/silent" &
s_pids=($!)
sleep 0.7  # the slow one after them: the oldest unproven connections are the first closed past 64
"${stranger[@]}" slowloris "$port" > "$dir/slowloris" & s_pids+=($!)
"${stranger[@]}" garbage "$port" > "$dir/garbage" & s_pids+=($!)
"${stranger[@]}" claim "$port" 1 3 strangers "" > "$dir/no_secret" & s_pids+=($!)
"${stranger[@]}" claim "$port" 1 3 strangers "not-the-secret" > "$dir/wrong_secret" & s_pids+=($!)
sleep 0.5
# The real rank 1 through the relay, which records its handshake; then the replay.
"${stranger[@]}" proxy "$relay" "$port" "$dir/recorded" > "$dir/proxy" & relay_pid=$!
rank with_1 1 "$relay" "$stranger_host"  # the relay runs beside rank 1
for _ in $(seq 100); do [[ -f "$dir/recorded" ]] && break; sleep 0.05; done
"${stranger[@]}" replay "$port" "$dir/recorded" > "$dir/replay"
sleep 1
last=$(now)
rank with_2 2 "$port"
wait "${pids[@]}"
with=$(python3 -c "print(round($(now) - $last, 2))")
wait "${s_pids[@]}"
kill "$relay_pid" 2>/dev/null
for r in 0 1 2; do ok_rank "with_$r"; done
echo "the job among strangers: ${with} s from its last rank's start"
python3 -c "import sys; sys.exit(0 if $with <= $alone + 1.0 else 1)" || fail "start-up: ${with} s, alone ${alone} s"

expect() {  # expect NAME PATTERN
  if grep -q -- "$2" "$dir/$1"; then echo "ok   $(cat "$dir/$1")"; else fail "$1: $(cat "$dir/$1")"; fi
}
expect no_secret "claim: refused"
expect wrong_secret "claim: refused"
expect replay "replay: refused"
expect garbage "garbage: closed after"
expect slowloris "slowloris: closed after [12]\."
expect silent "silent: 200 of 200 closed within [0-2]\."
refusals=$(grep -c "refused a connection from $stranger_host" "$dir/with_0")
[[ $refusals -eq 1 ]] || fail "rank 0 reported the strangers' address $refusals times, not once:"
grep "refused a connection" "$dir/with_0" | head -3 | sed 's/^/    | /'

[[ $failures -eq 0 ]] && echo "tcp_strangers: every stranger refused, the job's result unchanged"
exit $((failures > 0))
