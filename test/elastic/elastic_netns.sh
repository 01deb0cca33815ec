#!/usr/bin/env bash
# chorusrun's elastic mode across four "hosts": four network namespaces on a
# bridge (a fifth namespace), each with an address of its own and its own
# CHORUS_HOST_ID, so the workers reach each other over TCP only (no shared
# memory). chorusrun runs on the first and starts the others through an
# agent that enters their namespace.
#  1. 4 workers on 4 hosts, kill -9 one: the other 3 finish, models equal.
#  2. kill -9 rank 0's worker: the same, rank 0 renumbered.
#  3. 3 hosts, a fourth added to the discovery script: it joins and gets the
#     state; with --blacklist-cooldown-range, a killed host comes back.
# usage: elastic_netns.sh CHORUSRUN ELASTIC_COUNTER   (needs root and `ip`)
set -uo pipefail
chorusrun="$1" counter="$2"
tag=$(( $$ % 200 + 20 )) net="10.232.$(( $$ % 200 + 20 ))"
work="$(mktemp -d)"
names=() ; for i in 1 2 3 4; do names+=("chel${i}_$$"); done
sw="chelsw_$$" br="chbr$$"
cleanup() {
  pkill -9 -f "^$counter" 2> /dev/null
  for n in "${names[@]}" "$sw"; do ip netns del "$n" 2> /dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$sw" && ip -n "$sw" link add "$br" type bridge && ip -n "$sw" link set "$br" up || {
  echo "elastic_netns: cannot make network namespaces here (root and ip needed)"; exit 77; }
for i in 1 2 3 4; do
  ns="${names[$((i - 1))]}" a="ch${tag}a$i" b="ch${tag}b$i"
  ip netns add "$ns"
  ip link add "$a" type veth peer name "$b"
  ip link set "$a" netns "$ns"
  ip link set "$b" netns "$sw"
  ip -n "$sw" link set "$b" master "$br"
  ip -n "$sw" link set "$b" up
  ip -n "$ns" addr add "$net.$i/24" dev "$a"
  ip -n "$ns" link set "$a" up
  ip -n "$ns" link set lo up
done
cat > "$work/agent" <<AGENT
#!/bin/sh
host="\$1"; shift
i="\${host##*.}"
case "\$host" in $net.[1-4]) ;; *) echo "agent: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "chel\${i}_$$" env CHORUS_HOST_ID="\$host" /bin/sh -c "\$*"
AGENT
chmod +x "$work/agent"
hosts() { { echo '#!/bin/sh'; for i in "$@"; do echo "echo $net.$i:1"; done; } > "$work/hosts.sh"; chmod +x "$work/hosts.sh"; }
ok=1
fail() { echo "FAIL: $*"; ok=0; }
run_job() {  # run_job NAME [flags]: chorusrun in host 1's namespace, in the background
  local name="$1"; shift
  ip netns exec "${names[0]}" "$chorusrun" --agent "$work/agent" --host-discovery-script "$work/hosts.sh" \
    --min-np 2 --max-np 4 "$@" "$counter" --steps 150 --step-seconds 0.05 > "$work/$name.out" 2>&1 &
  job=$!
}
wait_for() {
  for _ in $(seq 600); do grep -q "$2" "$work/$1.out" && return 0; kill -0 "$job" 2> /dev/null || return 1; sleep 0.1; done
  return 1
}
worker_of_rank() {  # the pid of the worker that printed rank R first
  local n; n="$(grep -m1 -o "^\[[0-9]*\] STEP [0-9]* rank=$2 " "$work/$1.out" | sed 's/^\[\([0-9]*\)\].*/\1/')"
  pgrep -f "^$counter --steps" | sort -n | sed -n "${n}p"
}
check() {  # check NAME SIZE
  wait "$job"; local code=$?
  local finals; finals="$(grep -c "FINAL .* size=$2 steps=150 .* OK" "$work/$1.out")"
  if [[ $code -ne 0 || "$finals" -ne "$2" ]]; then tail -30 "$work/$1.out"; fail "$1: exit $code, $finals OK FINAL lines at size $2"; return; fi
  [[ "$(grep -o 'checksum=[0-9.]*' "$work/$1.out" | sort -u | wc -l)" -eq 1 ]] || fail "$1: the models differ"
  echo "$1: passed"
}

hosts 1 2 3 4
run_job kill_one
wait_for kill_one "STEP 30 rank=3 size=4" || fail "kill_one: no step 30 at 4 ranks"
kill -9 "$(worker_of_rank kill_one 2)"
check kill_one 3

run_job kill_rank0
wait_for kill_rank0 "STEP 30 rank=3 size=4" || fail "kill_rank0: no step 30 at 4 ranks"
kill -9 "$(worker_of_rank kill_rank0 0)"
check kill_rank0 3

hosts 1 2 3
run_job grow --blacklist-cooldown-range 1 2
wait_for grow "STEP 20 rank=2 size=3" || fail "grow: no step 20 at 3 ranks"
hosts 1 2 3 4
wait_for grow "size=4" || fail "grow: the fourth host never joined"
kill -9 "$(worker_of_rank grow 1)"
wait_for grow "size=3" || fail "grow: no world of 3 after the kill"
check grow 4  # the killed host came back after its cooldown
grep -q "blacklisted" "$work/grow.out" || fail "grow: the killed worker's host was not blacklisted"

((ok)) && echo "elastic_netns: all checks passed" || exit 1
