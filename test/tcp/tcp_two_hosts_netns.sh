#!/usr/bin/env bash
# Two "hosts" on one machine over the TCP transport: two network namespaces
# joined by a veth pair, each with an address that exists only inside them.
# Ranks 0 and 1 run in the first (rank 1 reaching rank 0 through loopback),
# ranks 2 and 3 in the second, reaching rank 0 at its address, with
# torchrun's variables and nothing else (no MPI, no launcher). Each namespace
# has its own CHORUS_HOST_ID: the ranks of a namespace share memory, and the
# whole multi-rank suite runs across the connection between the namespaces.
# With CHORUSRUN set, the same again started by
# `chorusrun --tcp -H A:2,B:2 --agent AGENT` run in A's namespace: A is an
# address of its own, so A's ranks start directly, and AGENT enters B's
# namespace (the role ssh plays between machines).
# usage: [CHORUSRUN=path] tcp_two_hosts_netns.sh PROGRAM [ARGS...]   (needs root and `ip`)
set -uo pipefail
set -e
source "$(dirname "${BASH_SOURCE[0]}")/../common/netns_pair.sh" chorus_t 10.232
set +e

# Two ranks per host. Rank 1 reaches rank 0 through loopback (as a host
# name that /etc/hosts maps to 127.0.1.1 would): rank 0 must tell ranks 2
# and 3 its own address for rank 1, not the loopback one it saw.
job=(MASTER_PORT=29533 WORLD_SIZE=4)
pids=()
for r in 0 1 2 3; do
  ns=$nsa host=a addr=$ha
  ((r == 1)) && addr=127.0.0.1
  ((r >= 2)) && ns=$nsb host=b
  ip netns exec "$ns" env "${job[@]}" MASTER_ADDR="$addr" RANK=$r CHORUS_HOST_ID=$host timeout 240 "$@" \
    > "$work/$r" 2>&1 &
  pids+=($!)
done
failed=""
for r in 0 1 2 3; do
  wait "${pids[$r]}" || failed+=" $r"
  sed "s/^/[$r] /" "$work/$r" | tail -3
done
if [[ -n "$failed" ]]; then
  echo "tcp_two_hosts_netns: ranks$failed failed (2 ranks per host, rank 1 through loopback)"
  exit 1
fi
echo "tcp_two_hosts_netns: both hosts passed (by hand, 2 ranks each)"
[[ -z "${CHORUSRUN:-}" ]] && exit 0

# chorusrun starts a remote rank as AGENT HOST COMMAND.
cat > "$work/netns_agent" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  $ha) ns=$nsa ;;
  $hb) ns=$nsb ;;
  *) echo "netns_agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" env CHORUS_HOST_ID="\$host" /bin/sh -c "\$*"
AGENT
chmod +x "$work/netns_agent"
ip netns exec "$nsa" timeout 240 "$CHORUSRUN" --tcp -np 4 -H "$ha:2,$hb:2" --agent "$work/netns_agent" "$@" \
  > "$work/run" 2>&1
rc=$?
tail -6 "$work/run"
for r in 0 1 2 3; do
  grep -q "^\[$r\] All tests passed" "$work/run" || { echo "tcp_two_hosts_netns: chorusrun --tcp: rank $r failed (exit $rc)"; exit 1; }
done
echo "tcp_two_hosts_netns: both hosts passed (chorusrun --tcp --agent)"
